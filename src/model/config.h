// config.json → typed configs. Only what the engine needs is kept; every field is checked
// for type and range, and errors name the file and the field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tach::model {

enum class EncoderFamily { bert, distilbert };

struct EncoderConfig {
  EncoderFamily family = EncoderFamily::bert;
  std::string model_type;     // "bert" | "distilbert", as in the file
  std::string architecture;   // first of "architectures", or "" when absent
  bool classification_head = false;  // *ForSequenceClassification

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 0;  // 0 for DistilBERT (no token-type embeddings)
  float layer_norm_eps = 1e-12f;
  std::string hidden_act = "gelu";  // gelu (erf) or relu
  int64_t pad_token_id = 0;

  // Training only (inference is transformers' eval mode, where dropout is the identity).
  float hidden_dropout = 0.1f;      // BERT hidden_dropout_prob, DistilBERT dropout
  float attention_dropout = 0.1f;   // BERT attention_probs_dropout_prob, DistilBERT attention_dropout
  float classifier_dropout = 0.1f;  // BERT classifier_dropout (else hidden), DistilBERT seq_classif_dropout
  float initializer_range = 0.02f;  // std of a newly initialised head's weights

  std::vector<std::string> id2label;  // index = class id
  std::map<std::string, int> label2id;
  std::string problem_type;  // "", single_label_classification, multi_label_classification, regression
  std::string torch_dtype;   // as saved ("float32", ...), informational

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  int64_t head_dim() const { return hidden_size / num_heads; }
};

// Qwen2 decoders (Qwen2Model, Qwen2ForCausalLM, Qwen2ForSequenceClassification).
struct Qwen2Config {
  std::string architecture;
  bool classification_head = false;  // Qwen2ForSequenceClassification: the `score` head
  bool causal_lm = false;            // Qwen2ForCausalLM: the `lm_head` (or the tied embeddings)

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // grouped-query attention: heads share key/value heads in groups
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  std::string rope_type = "default";  // default | linear | dynamic
  double rope_factor = 1.0;
  bool tie_word_embeddings = false;
  float initializer_range = 0.02f;  // std of a newly initialised head's weights (training)
  int64_t pad_token_id = -1;  // -1: none
  std::vector<int64_t> eos_token_ids;

  std::vector<std::string> id2label;
  std::map<std::string, int> label2id;
  std::string problem_type;
  std::string torch_dtype;

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
};

// "bert", "distilbert", "qwen2": model_type of a config.json, checked against what tach builds.
std::string config_model_type(const nlohmann::json& j, const std::string& source);
std::string load_config_model_type(const std::string& path);
Qwen2Config parse_qwen2_config(const nlohmann::json& j, const std::string& source);
Qwen2Config parse_qwen2_config_text(const std::string& text, const std::string& source);
Qwen2Config load_qwen2_config(const std::string& path);

// The architectures tach can build, for error messages.
const std::vector<std::string>& supported_architectures();

EncoderConfig parse_encoder_config(const nlohmann::json& j, const std::string& source);
EncoderConfig parse_encoder_config_text(const std::string& text, const std::string& source);
EncoderConfig load_encoder_config(const std::string& path);

// A JSON file (config.json, adapter_config.json): an error naming the file when it cannot be
// read or is not valid JSON.
nlohmann::json read_json_file(const std::string& path);

}  // namespace tach::model
