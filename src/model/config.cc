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
  // A dropout rate: a number in [0, 1) (1 would drop everything and scale by infinity).
  float probability(const std::string& key, float fallback) const {
    if (!has(key)) return fallback;
    const json& v = root[key];
    if (!v.is_number() || !(v.get<double>() >= 0) || !(v.get<double>() < 1))
      fail(key, "must be a dropout probability in [0, 1), got " + v.dump());
    return v.get<float>();
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
constexpr const char* kQwen2Architectures[] = {"Qwen2Model", "Qwen2ForCausalLM", "Qwen2ForSequenceClassification"};

std::string supported_list() {
  std::string s;
  for (const auto& a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a.name);
  for (const char* a : kQwen2Architectures) s += ", " + std::string(a);
  return s;
}

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
    throw Error(source + ": not valid JSON: " + e.what());
  }
}

double positive_number(const Field& f, const json& obj, const std::string& key, double fallback) {
  if (!obj.contains(key) || obj[key].is_null()) return fallback;
  if (!obj[key].is_number() || !(obj[key].get<double>() > 0)) f.fail(key, "must be a positive number, got " + obj[key].dump());
  return obj[key].get<double>();
}

// RoPE settings, in transformers 4's spelling (rope_theta, rope_scaling) or 5's (rope_parameters).
void parse_rope(const Field& f, Qwen2Config& c) {
  c.rope_theta = positive_number(f, f.root, "rope_theta", 10000.0);
  const char* key = f.has("rope_parameters") ? "rope_parameters" : f.has("rope_scaling") ? "rope_scaling" : nullptr;
  if (!key) return;
  const json& r = f.root[key];
  if (!r.is_object()) f.fail(key, "must be an object or null");
  c.rope_theta = positive_number(f, r, "rope_theta", c.rope_theta);
  std::string type = "default";
  for (const char* k : {"rope_type", "type"})
    if (r.contains(k) && r[k].is_string()) type = r[k].get<std::string>();
  if (type != "default" && type != "linear" && type != "dynamic")
    f.fail(key, "has rope type \"" + type + "\"; tach supports default, linear and dynamic");
  c.rope_type = type;
  if (type != "default") {
    c.rope_factor = positive_number(f, r, "factor", 0);
    if (!(c.rope_factor >= 1)) f.fail(key, "needs \"factor\" >= 1 for " + type + " scaling");
  }
}

template <typename Config>
void parse_labels(const Field& f, Config& c) {
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
    throw Error(source + ": model_type \"" + c.model_type + "\" is not supported (supported: bert, distilbert, qwen2; " +
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
    c.hidden_dropout = f.probability("hidden_dropout_prob", 0.1f);
    c.attention_dropout = f.probability("attention_probs_dropout_prob", 0.1f);
    // BertForSequenceClassification: classifier_dropout, or hidden_dropout_prob when it is null.
    c.classifier_dropout = f.probability("classifier_dropout", c.hidden_dropout);
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
    c.hidden_dropout = f.probability("dropout", 0.1f);
    c.attention_dropout = f.probability("attention_dropout", 0.1f);
    c.classifier_dropout = f.probability("seq_classif_dropout", 0.2f);
  }
  c.initializer_range = f.has("initializer_range") ? f.number("initializer_range", 0.02f) : 0.02f;
  if (!(c.initializer_range > 0)) f.fail("initializer_range", "must be positive");
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
  return parse_encoder_config(parse_json_text(text, source), source);
}

EncoderConfig load_encoder_config(const std::string& path) { return parse_encoder_config_text(read_text_file(path), path); }

std::string config_model_type(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  const Field f{j, source};
  const std::string t = f.str("model_type", "");
  if (t.empty()) throw Error(source + ": missing \"model_type\" (supported: bert, distilbert, qwen2)");
  if (t != "bert" && t != "distilbert" && t != "qwen2")
    throw Error(source + ": model_type \"" + t + "\" is not supported (supported: bert, distilbert, qwen2; " +
                "architectures: " + supported_list() + ")");
  return t;
}

std::string load_config_model_type(const std::string& path) {
  return config_model_type(parse_json_text(read_text_file(path), path), path);
}

Qwen2Config parse_qwen2_config(const json& j, const std::string& source) {
  if (config_model_type(j, source) != "qwen2") throw Error(source + ": model_type is not qwen2");
  const Field f{j, source};
  Qwen2Config c;
  c.architecture = "Qwen2Model";
  if (f.has("architectures")) {
    const json& a = j["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string()) f.fail("architectures", "must be a non-empty array of strings");
    c.architecture = a[0].get<std::string>();
    bool known = false;
    for (const char* name : kQwen2Architectures) known = known || c.architecture == name;
    if (!known)
      throw Error(source + ": architecture \"" + c.architecture + "\" is not supported (supported: " + supported_list() +
                  ")");
  }
  c.classification_head = c.architecture == "Qwen2ForSequenceClassification";
  c.causal_lm = c.architecture == "Qwen2ForCausalLM";
  c.vocab_size = f.positive_int("vocab_size", 151936, false);
  c.hidden_size = f.positive_int("hidden_size", 4096, false);
  c.num_layers = f.positive_int("num_hidden_layers", 32, false);
  c.num_heads = f.positive_int("num_attention_heads", 32, false);
  c.num_kv_heads = f.positive_int("num_key_value_heads", c.num_heads, false);
  c.intermediate_size = f.positive_int("intermediate_size", 22016, false);
  c.max_position_embeddings = f.positive_int("max_position_embeddings", 32768, false);
  c.rms_norm_eps = f.number("rms_norm_eps", 1e-6f);
  if (c.hidden_size % c.num_heads != 0)
    throw Error(source + ": hidden size " + std::to_string(c.hidden_size) + " is not divisible by " +
                std::to_string(c.num_heads) + " attention heads");
  c.head_dim = f.positive_int("head_dim", c.hidden_size / c.num_heads, false);
  if (c.head_dim % 2 != 0) f.fail("head_dim", "must be even for rotary embeddings, got " + std::to_string(c.head_dim));
  if (c.num_heads % c.num_kv_heads != 0)
    throw Error(source + ": " + std::to_string(c.num_heads) + " attention heads cannot be shared among " +
                std::to_string(c.num_kv_heads) + " key/value heads (num_key_value_heads must divide them)");
  const std::string act = f.str("hidden_act", "silu");
  if (act != "silu") f.fail("hidden_act", "is \"" + act + "\"; Qwen2 in tach supports silu");
  if (f.has("use_sliding_window") && j["use_sliding_window"].is_boolean() && j["use_sliding_window"].get<bool>())
    f.fail("use_sliding_window", "is true; sliding-window attention is not supported");
  parse_rope(f, c);
  c.initializer_range = f.has("initializer_range") ? f.number("initializer_range", 0.02f) : 0.02f;
  if (!(c.initializer_range > 0)) f.fail("initializer_range", "must be positive");
  c.tie_word_embeddings = f.has("tie_word_embeddings") ? j["tie_word_embeddings"].is_boolean() &&
                                                            j["tie_word_embeddings"].get<bool>()
                                                      : false;
  c.pad_token_id = f.has("pad_token_id") ? f.nonneg_int("pad_token_id", 0) : -1;
  if (f.has("eos_token_id")) {
    const json& e = j["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int64_t>());
    else if (e.is_array())
      for (const auto& x : e) {
        if (!x.is_number_integer()) f.fail("eos_token_id", "must be an integer or a list of integers");
        c.eos_token_ids.push_back(x.get<int64_t>());
      }
    else f.fail("eos_token_id", "must be an integer or a list of integers");
  }
  c.torch_dtype = f.str("torch_dtype", f.str("dtype", ""));
  parse_labels(f, c);
  return c;
}

Qwen2Config parse_qwen2_config_text(const std::string& text, const std::string& source) {
  return parse_qwen2_config(parse_json_text(text, source), source);
}

Qwen2Config load_qwen2_config(const std::string& path) { return parse_qwen2_config_text(read_text_file(path), path); }

json read_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

}  // namespace tach::model
