// CoNLL-style text and JSON records into tagged sentences.
#include "data/conll.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/records.h"
#include "tach/error.h"

namespace tach::data {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::vector<std::string> columns_of(const std::string& line) {
  std::vector<std::string> cols;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const size_t b = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > b) cols.push_back(line.substr(b, i - b));
  }
  return cols;
}

std::string tag_column_text(int tag_column) {
  if (tag_column == -1) return "the last";
  if (tag_column < 0) return std::to_string(-tag_column) + " from the end";
  return std::to_string(tag_column) + " (from 0)";
}

std::string shown(const std::string& line) { return line.size() > 80 ? line.substr(0, 77) + "..." : line; }

// A tab-separated line whose first field (the word's column) holds several words, or any field a
// phrase of three or more: a table row with a sentence per line (GLUE's TSV), not a CoNLL word
// line, whose columns are single words (a file that mixes spaces and tabs may put two columns in
// one tab field, never a sentence). Read as CoNLL, such a file was one long "sentence" of every
// row's words.
bool is_table_row(const std::string& line) {
  if (line.find('\t') == std::string::npos) return false;
  size_t b = 0;
  for (int field = 0; b <= line.size(); ++field) {
    size_t e = line.find('\t', b);
    if (e == std::string::npos) e = line.size();
    const size_t words = columns_of(line.substr(b, e - b)).size();
    if (words >= 3 || (field == 0 && words >= 2)) return true;
    b = e + 1;
  }
  return false;
}

// A JSON value of tags: names, or integer ids into `names`.
std::vector<std::string> tags_of(const nlohmann::json& v, const std::vector<std::string>& names,
                                 const std::string& where) {
  check(v.is_array(), where + " is not a list of tags");
  std::vector<std::string> tags;
  tags.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& t = v[i];
    if (t.is_string()) {
      tags.push_back(t.get<std::string>());
    } else if (t.is_number_integer()) {
      check(!names.empty(), where + " holds integer tags (" + t.dump() +
                                "), and there are no tag names to map them through: give the model's labels "
                                "(config.json id2label) or a label list");
      const auto id = t.get<int64_t>();
      check(id >= 0 && id < int64_t(names.size()), where + "[" + std::to_string(i) + "] = " + std::to_string(id) +
                                                       " is not a tag id: there are " + std::to_string(names.size()) +
                                                       " tag names (ids 0.." + std::to_string(names.size() - 1) + ")");
      tags.push_back(names[size_t(id)]);
    } else {
      throw Error(where + "[" + std::to_string(i) + "] is " + t.dump() + ": a tag is a name or an integer id");
    }
  }
  return tags;
}

TaggedSentence sentence_of(const nlohmann::json& obj, const TaggedJsonOptions& o, const std::string& where,
                           int64_t source) {
  check(obj.is_object(), where + ": expected an object with '" + o.words_key + "' and '" + o.tags_key + "'");
  std::string keys;
  for (auto it = obj.begin(); it != obj.end(); ++it) keys += (keys.empty() ? "'" : ", '") + it.key() + "'";
  for (const std::string& key : {o.words_key, o.tags_key})
    check(obj.contains(key), where + ": no key '" + key + "'; the record has " + (keys.empty() ? "none" : keys));
  const nlohmann::json& words = obj[o.words_key];
  check(words.is_array() && std::all_of(words.begin(), words.end(), [](const auto& w) { return w.is_string(); }),
        where + ": '" + o.words_key + "' is not a list of strings");
  TaggedSentence s;
  s.words = words.get<std::vector<std::string>>();
  s.tags = tags_of(obj[o.tags_key], o.tag_names, where + ": '" + o.tags_key + "'");
  check(s.words.size() == s.tags.size(), where + ": " + std::to_string(s.words.size()) + " words ('" + o.words_key +
                                             "') but " + std::to_string(s.tags.size()) + " tags ('" + o.tags_key +
                                             "')");
  s.source = source;
  return s;
}

std::string read_bytes(const std::string& path) {
  std::error_code ec;
  check(std::filesystem::is_regular_file(path, ec), "dataset " + path + ": not found (or not a file)");
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), "dataset " + path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<TaggedSentence> read_conll(const std::string& path, const std::string& bytes, int tag_column) {
  std::vector<TaggedSentence> out;
  TaggedSentence current;
  const auto finish = [&] {
    if (!current.words.empty()) out.push_back(std::move(current));
    current = TaggedSentence{};
  };
  size_t pos = bytes.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  int64_t lineno = 0;
  while (pos < bytes.size()) {
    size_t eol = bytes.find('\n', pos);
    if (eol == std::string::npos) eol = bytes.size();
    const std::string line = bytes.substr(pos, eol - pos);
    pos = eol + 1;
    ++lineno;
    const std::vector<std::string> cols = columns_of(line);
    if (cols.empty() || cols[0] == "-DOCSTART-") {  // a sentence (or a document) ends
      finish();
      continue;
    }
    if (is_table_row(line)) {
      const size_t start = bytes.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
      std::string first_line = bytes.substr(start, bytes.find('\n', start) - start);
      for (char& c : first_line)
        if (c == '\t') c = ' ';
      throw Error(
          path + ":" + std::to_string(lineno) + ": a tab-separated row whose field holds several words: the " +
          "file looks like a table with a sentence per line (its first line: '" + shown(first_line) +
          "'), not CoNLL text; a token classifier needs a tag for every word: one word per line with its "
          "tag in the last column (tach eval --tag-column picks another), a blank line between sentences, or JSON "
          "records with tokens and ner_tags");
    }
    const int64_t index = tag_column < 0 ? int64_t(cols.size()) + tag_column : tag_column;
    if (index < 1 || index >= int64_t(cols.size()))
      throw Error(path + ":" + std::to_string(lineno) + ": '" + shown(line) + "' has " + std::to_string(cols.size()) +
                  (cols.size() == 1 ? " column" : " columns") +
                  "; a word line needs the word (column 0) and its tag (" + "column " + tag_column_text(tag_column) +
                  "; tach eval --tag-column picks another), separated by spaces or tabs");
    if (current.words.empty()) current.source = lineno;
    current.words.push_back(cols[0]);
    current.tags.push_back(cols[size_t(index)]);
  }
  finish();
  return out;
}

std::vector<TaggedSentence> read_tagged_json(const std::string& path, const std::string& bytes, bool jsonl,
                                             const TaggedJsonOptions& options) {
  std::vector<TaggedSentence> out;
  if (jsonl) {
    std::istringstream in(bytes);
    std::string line;
    int64_t lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        throw Error(path + ":" + std::to_string(lineno) + ": not JSON (" + e.what() + ")");
      }
      out.push_back(sentence_of(j, options, path + ":" + std::to_string(lineno), lineno));
    }
    return out;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::exception& e) { throw Error(path + ": not JSON (" + e.what() + ")"); }
  const nlohmann::json* items = &j;
  std::string where = path;
  if (j.is_object() && !j.contains(options.words_key)) {
    // An object of splits: {"train": [...], "test": [...]}
    std::string names;
    for (auto it = j.begin(); it != j.end(); ++it) names += (names.empty() ? "" : ", ") + it.key();
    std::string chosen = options.split;
    if (chosen.empty()) {
      check(j.contains("test"), path + ": an object without '" + options.words_key +
                                    "': read as splits, but none is chosen (--split) and none is called 'test'; "
                                    "the keys are: " +
                                    names);
      chosen = "test";
    }
    check(j.contains(chosen), path + ": no split '" + chosen + "'; the file has: " + names);
    items = &j[chosen];
    where = path + ": " + chosen;
  } else if (j.is_object()) {
    return {sentence_of(j, options, path, 1)};
  }
  check(items->is_array(),
        where + ": expected a list of records with '" + options.words_key + "' and '" + options.tags_key + "'");
  for (size_t i = 0; i < items->size(); ++i)
    out.push_back(sentence_of((*items)[i], options, where + "[" + std::to_string(i) + "]", int64_t(i) + 1));
  return out;
}

std::vector<TaggedSentence> read_tagged_parquet(const std::string& path, const std::string& bytes,
                                                const TaggedJsonOptions& options) {
  const Records records = read_parquet(path, bytes, true);
  TaggedJsonOptions o = options;
  // Integer tags named by the file's own ClassLabel (conll2003's ner_tags), unless named on purpose.
  if (const auto it = records.class_names.find(o.tags_key);
      it != records.class_names.end() && !it->second.empty() && !o.tag_names_given)
    o.tag_names = it->second;
  std::vector<TaggedSentence> out;
  for (size_t i = 0; i < records.rows.size(); ++i)
    out.push_back(sentence_of(record_object(records, i), o, path + ": row " + std::to_string(records.row_numbers[i]),
                              records.row_numbers[i]));
  return out;
}

std::vector<TaggedSentence> read_tagged_file(const std::string& path, const std::string& format, int tag_column,
                                             const TaggedJsonOptions& options) {
  std::string f = format;
  if (f == "auto") {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    f = ext == ".json"                          ? "json"
        : (ext == ".jsonl" || ext == ".ndjson") ? "jsonl"
        : (ext == ".parquet" || ext == ".pq")   ? "parquet"
                                                : "conll";
  }
  check(
      f == "conll" || f == "json" || f == "jsonl" || f == "parquet",
      "dataset " + path + ": format '" + format + "' is not one of auto, conll, json, jsonl, parquet for tagged words");
  const std::string bytes = read_bytes(path);
  std::vector<TaggedSentence> sentences = f == "conll"     ? read_conll(path, bytes, tag_column)
                                          : f == "parquet" ? read_tagged_parquet(path, bytes, options)
                                                           : read_tagged_json(path, bytes, f == "jsonl", options);
  check(!sentences.empty(),
        "dataset " + path + ": no sentences (" +
            (f == "conll" ? std::string("word lines with a tag, blank lines between sentences")
                          : "records with '" + options.words_key + "' and '" + options.tags_key + "'") +
            ")");
  return sentences;
}

}  // namespace tach::data
