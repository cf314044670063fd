#include "model/sentence_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "tach/error.h"

namespace tach::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

ops::PoolingMode parse_mode(const std::string& name, const std::string& file) {
  using M = ops::PoolingMode;
  if (name == "cls") return M::cls;
  if (name == "max") return M::max;
  if (name == "mean") return M::mean;
  if (name == "mean_sqrt_len_tokens" || name == "mean_sqrt_len") return M::mean_sqrt_len;
  if (name == "weightedmean") return M::weighted_mean;
  if (name == "lasttoken") return M::last_token;
  throw Error(file + ": pooling mode '" + name +
              "' is not one sentence-transformers defines (cls, max, mean, mean_sqrt_len_tokens, weightedmean, "
              "lasttoken)");
}

// Both spellings sentence-transformers has saved: the pooling_mode_* booleans (v2 to v5) and a
// "pooling_mode" string or list (v6). The booleans' order is the concatenation order.
std::vector<ops::PoolingMode> pooling_modes(const json& j, const std::string& file) {
  std::vector<ops::PoolingMode> modes;
  if (j.contains("pooling_mode")) {
    const json& m = j["pooling_mode"];
    if (m.is_string()) return {parse_mode(m.get<std::string>(), file)};
    check(m.is_array() && !m.empty(), file + ": pooling_mode must be a mode name or a list of them");
    for (const auto& x : m) {
      check(x.is_string(), file + ": pooling_mode lists a value that is not a mode name: " + x.dump());
      modes.push_back(parse_mode(x.get<std::string>(), file));
    }
    return modes;
  }
  static const std::pair<const char*, ops::PoolingMode> legacy[] = {
      {"pooling_mode_cls_token", ops::PoolingMode::cls},
      {"pooling_mode_max_tokens", ops::PoolingMode::max},
      {"pooling_mode_mean_tokens", ops::PoolingMode::mean},
      {"pooling_mode_mean_sqrt_len_tokens", ops::PoolingMode::mean_sqrt_len},
      {"pooling_mode_weightedmean_tokens", ops::PoolingMode::weighted_mean},
      {"pooling_mode_lasttoken", ops::PoolingMode::last_token},
  };
  for (const auto& [key, mode] : legacy)
    if (j.contains(key)) {
      check(j[key].is_boolean(), file + ": " + key + " must be true or false");
      if (j[key].get<bool>()) modes.push_back(mode);
    }
  if (modes.empty()) modes.push_back(ops::PoolingMode::mean);  // sentence-transformers' own fallback
  return modes;
}

// config_sentence_transformers.json: {"prompts": {"query": "Instruct: ...\nQuery:", ...},
// "default_prompt_name": null}.
void read_prompts(SentenceEmbeddingConfig& c, const FileReader& read, const std::string& dir) {
  const std::string file = dir + "/config_sentence_transformers.json";
  const auto text = read("config_sentence_transformers.json");
  if (!text) return;
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) { throw Error(file + ": not valid JSON: " + e.what()); }
  check(j.is_object(), file + ": must be a JSON object");
  if (j.contains("prompts") && !j["prompts"].is_null()) {
    check(j["prompts"].is_object(), file + ": \"prompts\" must be an object of name: text");
    for (const auto& [name, value] : j["prompts"].items()) {
      check(value.is_string(), file + ": prompt \"" + name + "\" must be a string");
      c.prompts[name] = value.get<std::string>();
    }
  }
  if (j.contains("default_prompt_name") && j["default_prompt_name"].is_string()) {
    c.default_prompt_name = j["default_prompt_name"].get<std::string>();
    check(c.prompts.count(c.default_prompt_name) > 0,
          file + ": default_prompt_name \"" + c.default_prompt_name + "\" is not one of its prompts");
  }
}

}  // namespace

std::string SentenceEmbeddingConfig::pooling_name() const {
  std::string s;
  for (auto m : modes) {
    if (!s.empty()) s += '+';
    s += ops::pooling_mode_name(m);
  }
  return s;
}

SentenceEmbeddingConfig default_sentence_embedding_config() {
  SentenceEmbeddingConfig c;
  c.source =
      "no modules.json: mean pooling without normalisation, as sentence-transformers builds a plain "
      "transformers model";
  return c;
}

namespace {

json parse_json(const std::string& text, const std::string& name) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) { throw Error(name + ": not valid JSON: " + e.what()); }
}

// PATH/config.json of a Dense module: in_features, out_features, bias, activation_function.
DenseModule read_dense(const std::string& path, const FileReader& read, const std::string& dir, const std::string& mf) {
  const std::string name = (fs::path(path) / "config.json").string();
  const std::string file = (fs::path(dir) / name).string();
  const auto text = read(name);
  check(text.has_value(), mf + " names a Dense module in '" + path + "', but " + file + " does not exist");
  const json j = parse_json(*text, file);
  check(j.is_object(), file + ": expected a JSON object");
  DenseModule d;
  d.path = path;
  for (auto [key, field] : {std::pair{"in_features", &d.in_features}, std::pair{"out_features", &d.out_features}}) {
    check(j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() > 0,
          file + ": \"" + key + "\" must be a positive integer");
    *field = j[key].get<int64_t>();
  }
  if (j.contains("bias")) {
    check(j["bias"].is_boolean(), file + ": \"bias\" must be true or false");
    d.bias = j["bias"].get<bool>();
  }
  const std::string act = j.value("activation_function", std::string("torch.nn.modules.activation.Tanh"));
  if (act == "torch.nn.modules.activation.Tanh" || act == "torch.nn.Tanh") d.tanh = true;
  else if (act == "torch.nn.modules.linear.Identity" || act == "torch.nn.Identity") d.tanh = false;
  else throw Error(file + ": activation_function '" + act + "' is not one tach runs (Tanh, Identity)");
  for (const char* key : {"module_input_name", "module_output_name"})
    if (j.contains(key) && j[key] != "sentence_embedding")
      throw Error(file + ": " + key + " " + j[key].dump() +
                  ": tach runs a Dense module on the pooled sentence embedding only");
  return d;
}

}  // namespace

SentenceEmbeddingConfig parse_sentence_embedding_config(const std::string& modules_text, const FileReader& read,
                                                        const std::string& dir) {
  const std::string mf = (fs::path(dir) / "modules.json").string();
  const json modules = parse_json(modules_text, mf);
  check(modules.is_array() && !modules.empty(), mf + ": expected a list of modules");
  SentenceEmbeddingConfig c;
  c.source = "modules.json";
  c.dir = dir;
  bool transformer = false, pooling = false;
  for (const auto& m : modules) {
    check(m.is_object() && m.contains("type") && m["type"].is_string(),
          mf + ": a module without a \"type\": " + m.dump());
    check(!m.contains("path") || m["path"].is_string(), mf + ": a module's \"path\" must be a string: " + m.dump());
    const std::string type = m["type"].get<std::string>();
    const std::string path = m.value("path", std::string());
    check(path.find("..") == std::string::npos && (path.empty() || path[0] != '/'),
          mf + ": module path '" + path + "' leaves the model directory");
    const std::string kind = type.substr(type.rfind('.') == std::string::npos ? 0 : type.rfind('.') + 1);
    if (kind == "Transformer" && !transformer && !pooling) {
      transformer = true;
      const std::string st_name = (fs::path(path) / "sentence_bert_config.json").string();
      if (const auto text = read(st_name)) {
        const json st = parse_json(*text, (fs::path(dir) / st_name).string());
        check(st.is_object(), (fs::path(dir) / st_name).string() + ": expected a JSON object");
        if (st.contains("max_seq_length") && st["max_seq_length"].is_number_integer())
          c.max_seq_length = std::max<int64_t>(0, st["max_seq_length"].get<int64_t>());
        if (st.contains("do_lower_case") && st["do_lower_case"].is_boolean())
          c.do_lower_case = st["do_lower_case"].get<bool>();
      }
    } else if (kind == "Pooling" && transformer && !pooling) {
      pooling = true;
      const std::string pool_name = (fs::path(path) / "config.json").string();
      const std::string pf = (fs::path(dir) / pool_name).string();
      const auto text = read(pool_name);
      check(text.has_value(), mf + " names a Pooling module in '" + path + "', but " + pf + " does not exist");
      const json p = parse_json(*text, pf);
      check(p.is_object(), pf + ": expected a JSON object");
      c.modes = pooling_modes(p, pf);
      for (const char* key : {"word_embedding_dimension", "embedding_dimension"})
        if (p.contains(key) && p[key].is_number_integer()) c.embedding_dimension = p[key].get<int64_t>();
      check(!p.contains("include_prompt") || !p["include_prompt"].is_boolean() || p["include_prompt"].get<bool>(),
            pf + ": include_prompt false (prompt tokens left out of the pooling) needs prompts, which tach embed does "
                 "not add");
    } else if (kind == "Dense" && pooling && !c.normalize) {
      c.dense.push_back(read_dense(path, read, dir, mf));
    } else if (kind == "Normalize" && pooling && !c.normalize) {
      c.normalize = true;
    } else {
      throw Error(mf + ": module '" + type + "'" + (path.empty() ? "" : " in '" + path + "'") +
                  " is not one tach runs: it runs Transformer → Pooling → (Dense ...) → (Normalize), in that order");
    }
  }
  check(transformer, mf + ": no sentence_transformers.models.Transformer module");
  if (!pooling) {
    // sentence-transformers adds mean pooling itself when a model lists no Pooling module.
    c.modes = {ops::PoolingMode::mean};
    c.source = "modules.json (no Pooling module: mean pooling, as sentence-transformers adds)";
  }
  read_prompts(c, read, dir);
  return c;
}

std::optional<SentenceEmbeddingConfig> read_sentence_embedding_config(const std::string& dir) {
  const fs::path modules_file = fs::path(dir) / "modules.json";
  if (!fs::exists(modules_file)) return std::nullopt;
  auto read = [&](const std::string& relative) -> std::optional<std::string> {
    const fs::path p = fs::path(dir) / relative;
    if (!fs::is_regular_file(p)) return std::nullopt;
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return parse_sentence_embedding_config(*read("modules.json"), read, dir);
}

}  // namespace tach::model
