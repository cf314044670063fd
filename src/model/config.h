// config.json → typed configs. Only what the engine needs is kept; every field is checked
// for type and range, and errors name the file and the field.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tach/model.h"

namespace tach::model {

struct EncoderFamily;  // model/family.h

struct EncoderConfig {
  const EncoderFamily* family = nullptr;  // the family row's encoder part
  std::string model_type;                 // "bert", "distilbert", "roberta", "xlm-roberta", as in the file
  std::string architecture;               // first of "architectures", or "" when absent
  bool classification_head = false;       // *ForSequenceClassification
  // The head config.json's architecture names (Head::none for the bare model or none named).
  Head checkpoint_head = Head::none;
  bool tie_word_embeddings = true;  // the masked-LM decoder is the word embeddings (config.json's, default true)

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 0;  // 0 for DistilBERT (no token-type embeddings); 1 for RoBERTa
  float layer_norm_eps = 1e-12f;
  std::string hidden_act = "gelu";  // gelu (erf) or relu
  int64_t pad_token_id = 0;
  int64_t relative_attention_buckets = 0;  // MPNet's relative_attention_num_buckets (the table's rows)
  // config.json's pruned_heads (transformers 4's spelling of a head-pruned checkpoint): per layer,
  // the original indices of the heads removed, sorted; empty: every layer has num_heads. The
  // layer's q, k, v then have (num_heads - removed) * head_dim rows, in the original order.
  std::vector<std::vector<int64_t>> pruned_heads;

  // Training only (inference is transformers' eval mode, where dropout is the identity).
  float hidden_dropout = 0.1f;      // BERT hidden_dropout_prob, DistilBERT dropout
  float attention_dropout = 0.1f;   // BERT attention_probs_dropout_prob, DistilBERT attention_dropout
  float classifier_dropout = 0.1f;  // BERT, RoBERTa classifier_dropout (else hidden), DistilBERT seq_classif_dropout
  float initializer_range = 0.02f;  // std of a newly initialised head's weights

  std::vector<std::string> id2label;  // index = class id
  std::map<std::string, int> label2id;
  std::string problem_type;  // "", single_label_classification, multi_label_classification, regression
  std::string torch_dtype;   // as saved ("float32", ...), informational

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t heads_in_layer(int64_t layer) const {
    return pruned_heads.empty() ? num_heads : num_heads - int64_t(pruned_heads[size_t(layer)].size());
  }
};

// model_type of a config.json, checked against the family table (model/family.cc).
std::string config_model_type(const nlohmann::json& j, const std::string& source);
std::string load_config_model_type(const std::string& path);

EncoderConfig parse_encoder_config(const nlohmann::json& j, const std::string& source);
EncoderConfig parse_encoder_config_text(const std::string& text, const std::string& source);
EncoderConfig load_encoder_config(const std::string& path);

// A JSON file (config.json, adapter_config.json): an error naming the file when it cannot be
// read or is not valid JSON.
nlohmann::json read_json_file(const std::string& path);

}  // namespace tach::model
