#include "model/config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tach/error.h"

namespace tach::model {

using json = nlohmann::json;

namespace {

struct Field {
  const json& root;
  const std::string& source;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(source + ": \"" + key + "\" " + what);
  }
  bool has(const std::string& key) const { return root.contains(key) && !root[key].is_null(); }

  int64_t positive_int(const std::string& key, int64_t fallback, bool required) const {
    if (!has(key)) {
      if (required) throw Error(source + ": missing \"" + key + "\"");
      return fallback;
    }
    const json& v = root[key];
    if (!v.is_number_integer()) fail(key, "must be an integer, got " + std::string(v.type_name()));
    const int64_t x = v.get<int64_t>();
    if (x <= 0 || x > (int64_t(1) << 40)) fail(key, "must be a positive integer, got " + std::to_string(x));
    return x;
  }
  int64_t nonneg_int(const std::string& key, int64_t fallback) const {
    if (!has(key)) return fallback;
    const json& v = root[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      fail(key, "must be a non-negative integer, got " + v.dump());
    return v.get<int64_t>();
  }
  std::string str(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!root[key].is_string()) fail(key, "must be a string, got " + std::string(root[key].type_name()));
    return root[key].get<std::string>();
  }
  float number(const std::string& key, float fallback) const {
    if (!has(key)) return fallback;
    if (!root[key].is_number()) fail(key, "must be a number, got " + std::string(root[key].type_name()));
    const double v = root[key].get<double>();
    if (!(v > 0 && v < 1)) fail(key, "must be in (0, 1), got " + root[key].dump());
    return static_cast<float>(v);
  }
};

struct ArchitectureInfo {
  const char* name;
  EncoderFamily family;
  bool head;
};
constexpr ArchitectureInfo kArchitectures[] = {
    {"BertModel", EncoderFamily::bert, false},
    {"BertForSequenceClassification", EncoderFamily::bert, true},
    {"DistilBertModel", EncoderFamily::distilbert, false},
    {"DistilBertForSequenceClassification", EncoderFamily::distilbert, true},
};

std::string supported_list() {
  std::string s;
  for (const auto& a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

void parse_labels(const Field& f, EncoderConfig& c) {
  // Hugging Face saves id2label (string keys "0".."n-1") and label2id; num_labels is implied.
  if (f.has("id2label")) {
    const json& m = f.root["id2label"];
    if (!m.is_object() || m.empty()) f.fail("id2label", "must be a non-empty object {\"0\": \"LABEL\", ...}");
    c.id2label.assign(m.size(), "");
    std::vector<bool> seen(m.size(), false);
    for (auto it = m.begin(); it != m.end(); ++it) {
      size_t idx = 0;
      try {
        size_t used = 0;
        const long long v = std::stoll(it.key(), &used);
        if (used != it.key().size() || v < 0 || size_t(v) >= m.size()) throw std::out_of_range("");
        idx = size_t(v);
      } catch (const std::exception&) {
        f.fail("id2label", "keys must be the class ids 0.." + std::to_string(m.size() - 1) + ", got \"" + it.key() +
                               "\"");
      }
      if (!it->is_string()) f.fail("id2label", "[\"" + it.key() + "\"] must be a string");
      if (seen[idx]) f.fail("id2label", "repeats class id " + it.key());
      seen[idx] = true;
      c.id2label[idx] = it->get<std::string>();
    }
  }
  if (f.has("num_labels")) {
    const int64_t n = f.positive_int("num_labels", 0, true);
    if (c.id2label.empty()) {
      for (int64_t i = 0; i < n; ++i) c.id2label.push_back("LABEL_" + std::to_string(i));
    } else if (n != c.num_labels()) {
      f.fail("num_labels", "is " + std::to_string(n) + " but id2label has " + std::to_string(c.num_labels()) +
                               " entries");
    }
  }
  if (c.id2label.empty()) c.id2label = {"LABEL_0", "LABEL_1"};  // transformers' default
  for (size_t i = 0; i < c.id2label.size(); ++i) c.label2id[c.id2label[i]] = int(i);
  if (f.has("label2id")) {
    const json& m = f.root["label2id"];
    if (!m.is_object()) f.fail("label2id", "must be an object {\"LABEL\": id, ...}");
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it->is_number_integer()) f.fail("label2id", "[\"" + it.key() + "\"] must be an integer");
      const int64_t id = it->get<int64_t>();
      if (id < 0 || id >= c.num_labels() || c.id2label[size_t(id)] != it.key())
        f.fail("label2id", "maps \"" + it.key() + "\" to " + std::to_string(id) + ", which disagrees with id2label");
    }
  }
  c.problem_type = f.str("problem_type", "");
  if (!c.problem_type.empty() && c.problem_type != "single_label_classification" &&
      c.problem_type != "multi_label_classification" && c.problem_type != "regression")
    f.fail("problem_type", "is \"" + c.problem_type +
                               "\"; expected single_label_classification, multi_label_classification or regression");
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& a : kArchitectures) v.emplace_back(a.name);
    return v;
  }();
  return names;
}

EncoderConfig parse_encoder_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  const Field f{j, source};
  EncoderConfig c;
  c.model_type = f.str("model_type", "");
  if (c.model_type.empty()) throw Error(source + ": missing \"model_type\" (supported: bert, distilbert)");
  if (c.model_type == "bert") {
    c.family = EncoderFamily::bert;
  } else if (c.model_type == "distilbert") {
    c.family = EncoderFamily::distilbert;
  } else {
    throw Error(source + ": model_type \"" + c.model_type + "\" is not supported (supported: bert, distilbert; " +
                "architectures: " + supported_list() + ")");
  }
  if (f.has("architectures")) {
    const json& a = j["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string())
      f.fail("architectures", "must be a non-empty array of strings");
    c.architecture = a[0].get<std::string>();
    const ArchitectureInfo* found = nullptr;
    for (const auto& info : kArchitectures)
      if (c.architecture == info.name) found = &info;
    if (found == nullptr)
      throw Error(source + ": architecture \"" + c.architecture + "\" is not supported (supported: " +
                  supported_list() + ")");
    if (found->family != c.family)
      throw Error(source + ": architecture \"" + c.architecture + "\" does not belong to model_type \"" +
                  c.model_type + "\"");
    c.classification_head = found->head;
  }

  if (c.family == EncoderFamily::bert) {
    c.vocab_size = f.positive_int("vocab_size", 0, true);
    c.hidden_size = f.positive_int("hidden_size", 768, false);
    c.num_layers = f.positive_int("num_hidden_layers", 12, false);
    c.num_heads = f.positive_int("num_attention_heads", 12, false);
    c.intermediate_size = f.positive_int("intermediate_size", 3072, false);
    c.max_position_embeddings = f.positive_int("max_position_embeddings", 512, false);
    c.type_vocab_size = f.positive_int("type_vocab_size", 2, false);
    c.layer_norm_eps = f.number("layer_norm_eps", 1e-12f);
    c.hidden_act = f.str("hidden_act", "gelu");
    const std::string pos = f.str("position_embedding_type", "absolute");
    if (pos != "absolute")
      f.fail("position_embedding_type", "is \"" + pos + "\"; only \"absolute\" is supported");
  } else {
    c.vocab_size = f.positive_int("vocab_size", 0, true);
    c.hidden_size = f.positive_int("dim", 768, false);
    c.num_layers = f.positive_int("n_layers", 6, false);
    c.num_heads = f.positive_int("n_heads", 12, false);
    c.intermediate_size = f.positive_int("hidden_dim", 3072, false);
    c.max_position_embeddings = f.positive_int("max_position_embeddings", 512, false);
    c.type_vocab_size = 0;
    c.layer_norm_eps = 1e-12f;  // DistilBERT hard-codes its LayerNorm eps
    c.hidden_act = f.str("activation", "gelu");
  }
  if (c.hidden_act != "gelu" && c.hidden_act != "relu")
    throw Error(source + ": activation \"" + c.hidden_act + "\" is not supported (gelu, relu)");
  if (c.hidden_size % c.num_heads != 0)
    throw Error(source + ": hidden size " + std::to_string(c.hidden_size) + " is not divisible by " +
                std::to_string(c.num_heads) + " attention heads");
  c.pad_token_id = f.nonneg_int("pad_token_id", 0);
  c.torch_dtype = f.str("torch_dtype", f.str("dtype", ""));
  parse_labels(f, c);
  return c;
}

EncoderConfig parse_encoder_config_text(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(source + ": not valid JSON: " + e.what());
  }
  return parse_encoder_config(j, source);
}

EncoderConfig load_encoder_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_encoder_config_text(ss.str(), path);
}

}  // namespace tach::model
