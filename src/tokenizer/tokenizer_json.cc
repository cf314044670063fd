// Building a pipeline from tokenizer.json, or from the legacy files: vocab.txt with
// tokenizer_config.json (BERT), vocab.json with merges.txt (GPT-2 / Qwen2 byte-level BPE),
// plus special_tokens_map.json and added_tokens.json.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/pipeline.h"

namespace tach::tokenizer {

namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json parse_text(const std::string& text, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) { throw Error(where + ": not valid JSON: " + e.what()); }
}

json parse_file(const std::string& path) { return parse_text(read_file(path), path); }

std::string describe(const JsonAt& j) {
  if (j.value.is_null()) return "none";
  std::string s = j.value.value("type", std::string("?"));
  for (const char* list : {"normalizers", "pretokenizers"})
    if (j.has(list)) {
      std::string inner;
      for (const auto& e : j.value[list]) inner += (inner.empty() ? "" : ", ") + e.value("type", std::string("?"));
      s += "[" + inner + "]";
    }
  return s;
}

}  // namespace

Parts load_tokenizer_json(const std::string& path) { return parse_tokenizer_json(read_file(path), path); }

Parts parse_tokenizer_json(const std::string& text, const std::string& path) {
  const json root = parse_text(text, path);
  const JsonAt j{root, path, ""};
  if (!root.is_object()) j.fail("expected a JSON object");
  Parts p;
  if (j.has("added_tokens")) {
    JsonAt list = j.at("added_tokens");
    list.expect_array();
    for (size_t i = 0; i < list.value.size(); ++i) {
      JsonAt a = list.at(i);
      AddedToken t;
      t.content = a.str("content");
      const int64_t id = a.integer_or("id", -1);
      if (id < 0 || id > INT32_MAX) a.at("id").fail("expected a non-negative integer id");
      t.id = int32_t(id);
      t.special = a.boolean_or("special", false);
      t.single_word = a.boolean_or("single_word", false);
      t.lstrip = a.boolean_or("lstrip", false);
      t.rstrip = a.boolean_or("rstrip", false);
      t.normalized = a.boolean_or("normalized", !t.special);
      p.added.push_back(std::move(t));
    }
  }
  p.normalizer = make_normalizer(j.has("normalizer") ? j.at("normalizer") : JsonAt{json(), path, "normalizer"});
  p.pre_tokenizer =
      make_pre_tokenizer(j.has("pre_tokenizer") ? j.at("pre_tokenizer") : JsonAt{json(), path, "pre_tokenizer"});
  p.model = make_model(j.at("model"));
  p.post_processor =
      make_post_processor(j.has("post_processor") ? j.at("post_processor") : JsonAt{json(), path, "post_processor"});
  p.decoder = make_decoder(j.has("decoder") ? j.at("decoder") : JsonAt{json(), path, "decoder"});
  p.description =
      p.model->type() + ", " + std::to_string(p.model->vocab().size()) + " tokens + " + std::to_string(p.added.size()) +
      " added; normalizer " + describe(j.has("normalizer") ? j.at("normalizer") : JsonAt{json(), path, ""}) +
      "; pre_tokenizer " + describe(j.has("pre_tokenizer") ? j.at("pre_tokenizer") : JsonAt{json(), path, ""}) +
      "; post_processor " + describe(j.has("post_processor") ? j.at("post_processor") : JsonAt{json(), path, ""});
  for (const char* key : {"truncation", "padding"})
    if (j.has(key)) p.description += "; " + std::string(key) + " settings in the file are not applied";
  return p;
}

namespace {

// special_tokens_map.json values are "[CLS]" or {"content": "[CLS]", ...}.
std::string special_token(const json& m, const std::string& key, const std::string& fallback) {
  if (!m.is_object() || !m.contains(key)) return fallback;
  const json& v = m[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return fallback;
}

void add_added_tokens_json(const fs::path& dir, Parts& p) {
  const fs::path f = dir / "added_tokens.json";
  if (!fs::is_regular_file(f)) return;
  const json j = parse_file(f.string());
  if (!j.is_object()) throw Error(f.string() + ": expected an object {\"token\": id}");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_number_integer()) throw Error(f.string() + ": [\"" + it.key() + "\"]: expected an integer id");
    p.added.push_back({it.key(), it->get<int32_t>(), true, false, false, false, false});
  }
}

}  // namespace

Parts load_legacy(const std::string& dir_path) {
  const fs::path dir(dir_path);
  const json config = fs::is_regular_file(dir / "tokenizer_config.json")
                          ? parse_file((dir / "tokenizer_config.json").string())
                          : json::object();
  const json specials = fs::is_regular_file(dir / "special_tokens_map.json")
                            ? parse_file((dir / "special_tokens_map.json").string())
                            : json::object();
  Parts p;
  if (fs::is_regular_file(dir / "vocab.txt")) {
    // BERT: one token per line, the line number is the id.
    Vocab vocab;
    std::ifstream in(dir / "vocab.txt");
    std::string line;
    int32_t id = 0;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      vocab.add(line, id++);
    }
    const bool lower = config.is_object() && config.value("do_lower_case", true);
    const std::string unk = special_token(specials, "unk_token", "[UNK]");
    const std::string cls = special_token(specials, "cls_token", "[CLS]");
    const std::string sep = special_token(specials, "sep_token", "[SEP]");
    for (const char* key : {"pad_token", "unk_token", "cls_token", "sep_token", "mask_token"}) {
      const std::string t = special_token(specials, key, "");
      if (auto tid = vocab.find(t)) p.added.push_back({t, *tid, true, false, false, false, false});
    }
    const auto cls_id = vocab.find(cls), sep_id = vocab.find(sep);
    if (!cls_id || !sep_id) throw Error((dir / "vocab.txt").string() + ": has no " + cls + " or " + sep + " token");
    p.normalizer = make_normalizer(JsonAt{json{{"type", "BertNormalizer"}, {"lowercase", lower}}, "", ""});
    p.pre_tokenizer = make_pre_tokenizer(JsonAt{json{{"type", "BertPreTokenizer"}}, "", ""});
    p.model = make_wordpiece(std::move(vocab), unk, "##", 100);
    p.post_processor = make_bert_processing(cls, *cls_id, sep, *sep_id);
    p.decoder = make_wordpiece_decoder("##", true);
    p.description = "WordPiece from vocab.txt (lowercase " + std::string(lower ? "on" : "off") + ")";
  } else if (fs::is_regular_file(dir / "vocab.json") && fs::is_regular_file(dir / "merges.txt")) {
    const std::string vpath = (dir / "vocab.json").string(), mpath = (dir / "merges.txt").string();
    const json vj = parse_file(vpath);
    if (!vj.is_object()) throw Error(vpath + ": expected an object {\"token\": id}");
    Vocab vocab;
    for (auto it = vj.begin(); it != vj.end(); ++it) {
      if (!it->is_number_integer()) throw Error(vpath + ": [\"" + it.key() + "\"]: expected an integer id");
      vocab.add(it.key(), it->get<int32_t>());
    }
    std::vector<std::pair<std::string, std::string>> merges;
    std::ifstream in(mpath);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || (lineno == 1 && line.rfind("#version", 0) == 0)) continue;
      const auto sp = line.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == line.size())
        throw Error(mpath + ":" + std::to_string(lineno) + ": expected \"a b\"");
      merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
    }
    p.model = make_bpe(std::move(vocab), merges, mpath);
    const bool qwen = config.is_object() && config.value("tokenizer_class", std::string()) == "Qwen2Tokenizer";
    if (qwen) {
      // Qwen2's slow tokenizer: NFC, its own split pattern, then the byte mapping.
      p.normalizer = make_normalizer(JsonAt{json{{"type", "NFC"}}, "", ""});
      p.pre_tokenizer = make_pre_tokenizer(JsonAt{
          json{
              {"type", "Sequence"},
              {"pretokenizers",
               json::array(
                   {json{
                        {"type", "Split"},
                        {"pattern",
                         {{"Regex",
                           R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                        {"behavior", "Isolated"}},
                    json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}},
          "", ""});
    } else {
      p.pre_tokenizer = make_pre_tokenizer(JsonAt{json{{"type", "ByteLevel"}, {"add_prefix_space", false}}, "", ""});
    }
    p.decoder = make_byte_level_decoder();
    p.description =
        std::string("byte-level BPE from vocab.json + merges.txt") + (qwen ? " (Qwen2 pattern)" : " (GPT-2 pattern)");
  } else {
    throw Error(dir_path + ": no tokenizer.json, vocab.txt, or vocab.json with merges.txt");
  }
  add_added_tokens_json(dir, p);
  return p;
}

}  // namespace tach::tokenizer
