#include "model/config.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/config_fields.h"
#include "model/family.h"
#include "tach/error.h"

namespace tach::model {

using json = nlohmann::json;

namespace {

// The architectures the encoder rows build: "BertModel, BertForSequenceClassification, ...".
std::string encoder_architectures() {
  std::string s;
  for (const ModelFamily& f : model_families())
    if (f.encoder)
      for (const auto& [architecture, head] : family_architectures(f)) s += (s.empty() ? "" : ", ") + architecture;
  return s;
}

// config.json's pruned_heads: {"layer": [head, ...]} with original head indices, as transformers
// 4's prune_heads saves them. A layer left with no heads has no attention transformers can build.
void parse_pruned_heads(const Field& f, const ModelFamily& family, EncoderConfig& c) {
  if (!f.has("pruned_heads")) return;
  const json& p = f.root["pruned_heads"];
  if (!p.is_object()) f.fail("pruned_heads", "must be an object of layer: [heads], got " + p.dump());
  if (p.empty()) return;
  if (!family.pruning.pruned_heads)
    f.fail("pruned_heads", "is not read for " + std::string(family.name) + ": " + family.pruning.heads_refusal);
  c.pruned_heads.assign(size_t(c.num_layers), {});
  for (const auto& [key, heads] : p.items()) {
    int64_t layer = -1;
    try {
      size_t used = 0;
      layer = std::stoll(key, &used);
      if (used != key.size()) layer = -1;
    } catch (const std::exception&) {}
    if (layer < 0 || layer >= c.num_layers)
      f.fail("pruned_heads",
             "names layer \"" + key + "\"; the model has layers 0 to " + std::to_string(c.num_layers - 1));
    if (!heads.is_array()) f.fail("pruned_heads", "layer " + key + " must be a list of head indices");
    std::vector<int64_t>& removed = c.pruned_heads[size_t(layer)];
    for (const json& h : heads) {
      if (!h.is_number_integer() || h.get<int64_t>() < 0 || h.get<int64_t>() >= c.num_heads)
        f.fail("pruned_heads",
               "layer " + key + " lists head " + h.dump() + "; heads are 0 to " + std::to_string(c.num_heads - 1));
      removed.push_back(h.get<int64_t>());
    }
    std::sort(removed.begin(), removed.end());
    removed.erase(std::unique(removed.begin(), removed.end()), removed.end());
    if (int64_t(removed.size()) == c.num_heads)
      f.fail("pruned_heads", "removes every head of layer " + key + "; a layer keeps at least one");
  }
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json parse_json_text(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 23: syntax error ..." read as
    // "line 1, column 23: syntax error ...": the library's tag means nothing to a user.
    std::string what = e.what();
    if (const size_t tag = what.find("] "); what.rfind("[json.exception.", 0) == 0 && tag != std::string::npos)
      what = what.substr(tag + 2);
    if (what.rfind("parse error at ", 0) == 0) what = what.substr(15);
    throw Error(source + " is not valid JSON: " + what);
  }
}

double positive_number(const Field& f, const json& obj, const std::string& key, double fallback) {
  if (!obj.contains(key) || obj[key].is_null()) return fallback;
  if (!obj[key].is_number() || !(obj[key].get<double>() > 0))
    f.fail(key, "must be a positive number, got " + obj[key].dump());
  return obj[key].get<double>();
}

EncoderConfig parse_encoder_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  const Field f{j, source};
  EncoderConfig c;
  c.model_type = config_model_type(j, source);
  const ModelFamily& family = model_family(c.model_type);
  if (!family.encoder) throw Error(source + ": model_type \"" + c.model_type + "\" is not an encoder");
  c.family = family.encoder;
  if (f.has("architectures")) {
    const json& a = j["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string())
      f.fail("architectures", "must be a non-empty array of strings");
    c.architecture = a[0].get<std::string>();
    const ModelFamily* owner = nullptr;
    for (const ModelFamily& row : model_families())
      for (const auto& [architecture, head] : family_architectures(row))
        if (row.encoder && c.architecture == architecture) {
          owner = &row;
          c.checkpoint_head = head;
        }
    if (owner == nullptr)
      throw Error(source + ": architecture \"" + c.architecture +
                  "\" is not supported (supported: " + encoder_architectures() + ")");
    if (owner->encoder != c.family)
      throw Error(source + ": architecture \"" + c.architecture + "\" does not belong to model_type \"" + c.model_type +
                  "\"");
    c.classification_head = c.checkpoint_head == Head::sequence_classification;
  }
  c.tie_word_embeddings = f.flag("tie_word_embeddings", true);
  c.family->read_config(f, c);
  c.initializer_range = f.has("initializer_range") ? f.number("initializer_range", 0.02f) : 0.02f;
  if (!(c.initializer_range > 0)) f.fail("initializer_range", "must be positive");
  if (c.hidden_act != "gelu" && c.hidden_act != "relu")
    throw Error(source + ": activation \"" + c.hidden_act + "\" is not supported (gelu, relu)");
  if (c.hidden_size % c.num_heads != 0)
    throw Error(source + ": hidden size " + std::to_string(c.hidden_size) + " is not divisible by " +
                std::to_string(c.num_heads) + " attention heads");
  parse_pruned_heads(f, family, c);
  c.pad_token_id = f.nonneg_int("pad_token_id", c.pad_token_id);  // a family's read_config may set its default
  c.torch_dtype = f.str("torch_dtype", f.str("dtype", ""));
  parse_labels(f, c);
  return c;
}

EncoderConfig parse_encoder_config_text(const std::string& text, const std::string& source) {
  return parse_encoder_config(parse_json_text(text, source), source);
}

EncoderConfig load_encoder_config(const std::string& path) {
  return parse_encoder_config_text(read_text_file(path), path);
}

json read_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

}  // namespace tach::model
