#include "data/squad.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/records.h"
#include "tach/error.h"

namespace tach::data {

namespace {

using nlohmann::json;

// The byte where the character `chars` starts (utf8.size() past the end, npos beyond it).
size_t byte_of_char(const std::string& utf8, int64_t chars) {
  if (chars < 0) return std::string::npos;
  int64_t seen = 0;
  for (size_t i = 0; i < utf8.size(); ++i) {
    if ((static_cast<unsigned char>(utf8[i]) & 0xc0) == 0x80) continue;
    if (seen == chars) return i;
    ++seen;
  }
  return seen == chars ? utf8.size() : std::string::npos;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(path_ + ": " + where + ": " + what);
  }

  const json& field(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object()) fail(where, "expected a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, std::string("no \"") + key + "\" field");
    return *it;
  }
  std::string text(const json& obj, const char* key, const std::string& where) const {
    const json& v = field(obj, key, where);
    if (!v.is_string()) fail(where, std::string("\"") + key + "\" must be a string, not " + v.type_name());
    return v.get<std::string>();
  }
  std::string text_or(const json& obj, const char* key, const std::string& where, const std::string& fallback) const {
    if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) return fallback;
    return text(obj, key, where);
  }
  int64_t integer(const json& v, const std::string& where, const std::string& name) const {
    if (!v.is_number_integer()) fail(where, name + " must be an integer, not " + std::string(v.type_name()));
    return v.get<int64_t>();
  }
  bool impossible(const json& obj, const std::string& where) const {
    if (!obj.contains("is_impossible")) return false;
    const json& v = obj.at("is_impossible");
    if (!v.is_boolean()) fail(where, "\"is_impossible\" must be true or false");
    return v.get<bool>();
  }

  // Official layout: answers[] of {text, answer_start}.
  void answers_list(const json& qa, SquadQuestion& q, bool is_impossible) const {
    if (!qa.contains("answers") && is_impossible) return;
    const json& answers = field(qa, "answers", q.where);
    if (!answers.is_array()) fail(q.where, "\"answers\" must be a list");
    for (size_t a = 0; a < answers.size(); ++a) {
      const std::string at = q.where + ".answers[" + std::to_string(a) + "]";
      q.answers.push_back(text(answers[a], "text", at));
      q.answer_starts.push_back(integer(field(answers[a], "answer_start", at), at, "\"answer_start\""));
    }
  }

  // Flat layout: answers{text[], answer_start[]}.
  void answers_columns(const json& rec, SquadQuestion& q) const {
    const json& answers = field(rec, "answers", q.where);
    const json& texts = field(answers, "text", q.where + ".answers");
    const json& starts = field(answers, "answer_start", q.where + ".answers");
    if (!texts.is_array() || !starts.is_array()) fail(q.where, "answers.text and answers.answer_start must be lists");
    if (texts.size() != starts.size())
      fail(q.where, "answers.text has " + std::to_string(texts.size()) + " answers but answers.answer_start " +
                        std::to_string(starts.size()));
    for (size_t a = 0; a < texts.size(); ++a) {
      if (!texts[a].is_string()) fail(q.where, "answers.text[" + std::to_string(a) + "] must be a string");
      q.answers.push_back(texts[a].get<std::string>());
      q.answer_starts.push_back(integer(starts[a], q.where, "answers.answer_start[" + std::to_string(a) + "]"));
    }
  }

  SquadQuestion flat(const json& rec, const std::string& where, int64_t number) const {
    SquadQuestion q;
    q.where = where;
    q.id = text_or(rec, "id", where, std::to_string(number));
    q.title = text_or(rec, "title", where, "");
    q.context = text(rec, "context", where);
    q.question = text(rec, "question", where);
    answers_columns(rec, q);
    return q;
  }

  // A v1.1 answer must be where answer_start says (as SQuAD's own files have them).
  void check_v1(const SquadQuestion& q) const {
    if (q.answers.empty())
      fail(q.where + " (id " + q.id + ")",
           "no answer, which SQuAD v1.1 data must give every question (v2.0 marks a question without one "
           "is_impossible)");
    for (size_t a = 0; a < q.answers.size(); ++a) {
      // An empty text is no answer (its span is empty: no start or end token to learn or score).
      if (q.answers[a].empty())
        fail(q.where + " (id " + q.id + ")",
             "answer " + std::to_string(a) +
                 " has an empty text, which is no answer: SQuAD v1.1 data must give every question a span of its "
                 "context (v2.0 marks a question without one is_impossible, with answers: [])");
      const size_t at = byte_of_char(q.context, q.answer_starts[a]);
      if (at == std::string::npos || q.context.compare(at, q.answers[a].size(), q.answers[a]) != 0) {
        std::string found = at == std::string::npos
                                ? "past the end of the context"
                                : "the context reads \"" + q.context.substr(at, q.answers[a].size()) + "\"";
        fail(q.where + " (id " + q.id + ")", "the answer \"" + q.answers[a] +
                                                 "\" is not in its context at answer_start " +
                                                 std::to_string(q.answer_starts[a]) + ": " + found);
      }
    }
  }

  SquadData official(const json& root) const {
    SquadData d;
    const std::string version =
        root.contains("version") && root["version"].is_string() ? root["version"].get<std::string>() : "";
    d.v2 = version.find('2') != std::string::npos;
    const json& data = root.at("data");
    for (size_t i = 0; i < data.size(); ++i) {
      const std::string wi = "data[" + std::to_string(i) + "]";
      const std::string title = text_or(data[i], "title", wi, "");
      const json& paragraphs = field(data[i], "paragraphs", wi);
      if (!paragraphs.is_array()) fail(wi, "\"paragraphs\" must be a list");
      for (size_t p = 0; p < paragraphs.size(); ++p) {
        const std::string wp = wi + ".paragraphs[" + std::to_string(p) + "]";
        const std::string context = text(paragraphs[p], "context", wp);
        const json& qas = field(paragraphs[p], "qas", wp);
        if (!qas.is_array()) fail(wp, "\"qas\" must be a list");
        for (size_t k = 0; k < qas.size(); ++k) {
          SquadQuestion q;
          q.where = wp + ".qas[" + std::to_string(k) + "]";
          q.title = title;
          q.context = context;
          q.id = text_or(qas[k], "id", q.where, std::to_string(d.questions.size()));
          q.question = text(qas[k], "question", q.where);
          const bool is_impossible = impossible(qas[k], q.where);
          if (qas[k].contains("is_impossible")) d.v2 = true;
          answers_list(qas[k], q, is_impossible);
          // v2.0: an impossible question's answers are empty; plausible_answers are not gold.
          if (is_impossible) {
            q.answers.clear();
            q.answer_starts.clear();
          }
          d.questions.push_back(std::move(q));
        }
      }
    }
    d.layout = d.v2 ? "SQuAD v2.0 JSON" : "SQuAD v1.1 JSON";
    return d;
  }

  SquadData flat_records(const json& list, const std::string& layout) const {
    SquadData d;
    d.layout = layout;
    for (size_t i = 0; i < list.size(); ++i)
      d.questions.push_back(flat(list[i], "record " + std::to_string(i + 1), int64_t(i)));
    return d;
  }

  // The Hub's Parquet files (rajpurkar/squad, squad_v2): the flat layout's columns, answers a
  // struct of two lists.
  SquadData parquet(const std::string& bytes) const {
    const Records records = read_parquet(path_, bytes, true);
    SquadData d;
    d.layout = "flat Parquet";
    for (size_t i = 0; i < records.rows.size(); ++i)
      d.questions.push_back(
          flat(record_object(records, i), "row " + std::to_string(records.row_numbers[i]), int64_t(i)));
    return d;
  }

  SquadData jsonl(const std::string& bytes) const {
    SquadData d;
    d.layout = "flat JSONL";
    std::istringstream in(bytes);
    std::string line;
    int64_t lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j;
      try {
        j = json::parse(line);
      } catch (const json::exception& e) {
        fail("line " + std::to_string(lineno), std::string("not JSON (") + e.what() + ")");
      }
      d.questions.push_back(flat(j, "line " + std::to_string(lineno), int64_t(d.questions.size())));
    }
    return d;
  }

  SquadData parse(const std::string& bytes) const {
    SquadData d;
    json root;
    bool whole = bytes.compare(0, 4, "PAR1") != 0;
    if (whole) {
      try {
        root = json::parse(bytes);
      } catch (const json::exception&) {
        whole = false;  // JSONL, or broken: the line reader names the line
      }
    }
    if (bytes.compare(0, 4, "PAR1") == 0) {
      d = parquet(bytes);
    } else if (!whole) {
      d = jsonl(bytes);
    } else if (root.is_object() && root.contains("data") && root["data"].is_array()) {
      const json& data = root["data"];
      if (!data.empty() && data[0].is_object() && data[0].contains("paragraphs")) d = official(root);
      else d = flat_records(data, "flat JSON");
    } else if (root.is_array()) {
      d = flat_records(root, "flat JSON");
    } else if (root.is_object() && root.contains("context")) {
      d = jsonl(bytes);  // one JSONL record on its own
    } else {
      throw Error(path_ +
                  ": not SQuAD data: expected {\"data\": [{\"paragraphs\": ...}]}, a list of records with id, "
                  "context, question and answers, or such records one per line (JSONL)");
    }
    if (d.questions.empty()) throw Error(path_ + ": no questions");
    if (d.layout.rfind("flat", 0) == 0)
      for (const auto& q : d.questions) d.v2 = d.v2 || q.answers.empty();
    if (!d.v2)
      for (const auto& q : d.questions) check_v1(q);
    return d;
  }

 private:
  std::string path_;
};

}  // namespace

SquadData parse_squad(const std::string& path, const std::string& bytes) { return Reader(path).parse(bytes); }

void check_squad_format(const std::string& format, const std::string& fix_for) {
  if (format == "auto" || format == "json" || format == "jsonl" || format == "parquet") return;
  const bool tagged = format == "conll";
  const std::string task = tagged ? "token-classification" : "sequence-classification";
  const std::string fix =
      fix_for.empty() ? "-m with a " + task + " model reads it" : fix_for + " " + task + " reads it";
  throw Error(
      "--dataset-format " + format + " reads " +
      (tagged ? "tagged words (CoNLL text), which a token classifier reads"
              : "a table of texts and labels, which a sequence classifier reads") +
      "; a question-answering model reads SQuAD-format data (--dataset-format auto, json, jsonl or parquet): " + fix);
}

}  // namespace tach::data

tach::SquadData tach::read_squad(const std::string& path) {
  using data::parse_squad;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open the SQuAD file");
  std::ostringstream s;
  s << f.rdbuf();
  return parse_squad(path, s.str());
}
