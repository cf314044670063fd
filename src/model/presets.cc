// Built-in presets: real configs with synthetic weights, deterministic from a seed. They let
// a newcomer run and benchmark the engine without downloading anything. The configs are
// copies of ../shared/configs/ (and bert-base-uncased's, roberta-base's, xlm-roberta-base's and mpnet-base's
// published configs).
#include "model/presets.h"

#include <nlohmann/json.hpp>

#include "tach/error.h"

namespace tach::model {

namespace {

struct Preset {
  const char* name;
  const char* description;
  const char* config_json;
};

// ../shared/configs/distilbert-base-uncased-finetuned-sst-2-english.config.json
constexpr const char* kDistilbertBase = R"json(
{
  "_name_or_path": "distilbert-base-uncased-finetuned-sst-2-english",
  "activation": "gelu",
  "architectures": [
    "DistilBertModel"
  ],
  "attention_dropout": 0.1,
  "dim": 768,
  "dropout": 0.1,
  "finetuning_task": "sst-2",
  "hidden_dim": 3072,
  "id2label": {
    "0": "NEGATIVE",
    "1": "POSITIVE"
  },
  "initializer_range": 0.02,
  "label2id": {
    "NEGATIVE": 0,
    "POSITIVE": 1
  },
  "max_position_embeddings": 512,
  "model_type": "distilbert",
  "n_heads": 12,
  "n_layers": 6,
  "output_past": true,
  "pad_token_id": 0,
  "qa_dropout": 0.1,
  "seq_classif_dropout": 0.2,
  "sinusoidal_pos_embds": false,
  "tie_weights_": true,
  "torch_dtype": "float32",
  "transformers_version": "4.41.2",
  "vocab_size": 30522
}
)json";

// bert-base-uncased's config.json, as a 2-label sequence classifier.
constexpr const char* kBertBase = R"json({
  "architectures": ["BertForSequenceClassification"],
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "type_vocab_size": 2,
  "vocab_size": 30522
})json";

// ../shared/configs/bert-tiny-imdb.config.json
constexpr const char* kBertTiny = R"json(
{
  "architectures": [
    "BertForSequenceClassification"
  ],
  "attention_probs_dropout_prob": 0.1,
  "classifier_dropout": null,
  "dtype": "float32",
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 128,
  "initializer_range": 0.02,
  "intermediate_size": 512,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 2,
  "num_hidden_layers": 2,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "problem_type": "single_label_classification",
  "transformers_version": "4.57.0",
  "type_vocab_size": 2,
  "use_cache": true,
  "vocab_size": 30522
}
)json";

// roberta-base's published config.json, as a 2-label sequence classifier.
constexpr const char* kRobertaBase = R"json({
  "architectures": ["RobertaForSequenceClassification"],
  "attention_probs_dropout_prob": 0.1,
  "bos_token_id": 0,
  "eos_token_id": 2,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 514,
  "model_type": "roberta",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 1,
  "type_vocab_size": 1,
  "vocab_size": 50265
})json";

// xlm-roberta-base's published config.json, as a 2-label sequence classifier.
constexpr const char* kXlmRobertaBase = R"json({
  "architectures": ["XLMRobertaForSequenceClassification"],
  "attention_probs_dropout_prob": 0.1,
  "bos_token_id": 0,
  "eos_token_id": 2,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 514,
  "model_type": "xlm-roberta",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "output_past": true,
  "pad_token_id": 1,
  "position_embedding_type": "absolute",
  "type_vocab_size": 1,
  "vocab_size": 250002
})json";

// microsoft/mpnet-base's published config.json (all-mpnet-base-v2's body), as a 2-label sequence
// classifier.
constexpr const char* kMpnetBase = R"json({
  "architectures": ["MPNetForSequenceClassification"],
  "attention_probs_dropout_prob": 0.1,
  "bos_token_id": 0,
  "eos_token_id": 2,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 514,
  "model_type": "mpnet",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 1,
  "relative_attention_num_buckets": 32,
  "vocab_size": 30527
})json";

// The checkpoints as published: bert-base-uncased's, distilbert-base-uncased's and roberta-base's
// config.json (masked LMs), and bert-large-uncased's as a question-answering model (MLPerf's BERT).
constexpr const char* kBertBaseMlm = R"json({
  "architectures": ["BertForMaskedLM"],
  "attention_probs_dropout_prob": 0.1,
  "gradient_checkpointing": false,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "transformers_version": "4.6.0.dev0",
  "type_vocab_size": 2,
  "use_cache": true,
  "vocab_size": 30522
})json";

constexpr const char* kDistilbertBaseMlm = R"json({
  "activation": "gelu",
  "architectures": ["DistilBertForMaskedLM"],
  "attention_dropout": 0.1,
  "dim": 768,
  "dropout": 0.1,
  "hidden_dim": 3072,
  "initializer_range": 0.02,
  "max_position_embeddings": 512,
  "model_type": "distilbert",
  "n_heads": 12,
  "n_layers": 6,
  "pad_token_id": 0,
  "qa_dropout": 0.1,
  "seq_classif_dropout": 0.2,
  "sinusoidal_pos_embds": false,
  "tie_weights_": true,
  "transformers_version": "4.10.0.dev0",
  "vocab_size": 30522
})json";

constexpr const char* kRobertaBaseMlm = R"json({
  "architectures": ["RobertaForMaskedLM"],
  "attention_probs_dropout_prob": 0.1,
  "bos_token_id": 0,
  "eos_token_id": 2,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 514,
  "model_type": "roberta",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 1,
  "type_vocab_size": 1,
  "vocab_size": 50265
})json";

constexpr const char* kBertLargeQa = R"json({
  "architectures": ["BertForQuestionAnswering"],
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 4096,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 16,
  "num_hidden_layers": 24,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "type_vocab_size": 2,
  "vocab_size": 30522
})json";

constexpr Preset kPresets[] = {
    {"distilbert-base-uncased", "DistilBERT-base, 6 layers, 66M parameters, 2-label head (SST-2 config)",
     kDistilbertBase},
    {"bert-base-uncased", "BERT-base, 12 layers, 110M parameters, 2-label head", kBertBase},
    {"bert-tiny", "BERT-tiny, 2 layers, hidden 128, 4.4M parameters, 2-label head (IMDB config)", kBertTiny},
    {"roberta-base", "RoBERTa-base, 12 layers, 125M parameters, 2-label head", kRobertaBase},
    {"xlm-roberta-base", "XLM-RoBERTa-base, 12 layers, 278M parameters (250k-token vocabulary), 2-label head",
     kXlmRobertaBase},
    {"mpnet-base", "MPNet-base, 12 layers, 109M parameters, relative position bias, 2-label head", kMpnetBase},
    {"bert-base-uncased-mlm", "BERT-base as published: 12 layers, 110M parameters, masked-LM head", kBertBaseMlm},
    {"distilbert-base-uncased-mlm", "DistilBERT-base as published: 6 layers, 67M parameters, masked-LM head",
     kDistilbertBaseMlm},
    {"roberta-base-mlm", "RoBERTa-base as published: 12 layers, 125M parameters, masked-LM head", kRobertaBaseMlm},
    {"bert-large-uncased", "BERT-large, 24 layers, 335M parameters, question-answering head (MLPerf's BERT)",
     kBertLargeQa},
};

}  // namespace

std::vector<std::string> encoder_preset_list() {
  std::vector<std::string> v;
  for (const auto& p : kPresets) v.emplace_back(p.name);
  return v;
}

PresetConfig preset_config(const std::string& name) {
  for (const auto& p : kPresets) {
    if (name == p.name) {
      PresetConfig pc;
      pc.config = parse_encoder_config_text(p.config_json, "preset:" + name + " config");
      pc.description = p.description;
      pc.config_json = p.config_json;
      // A preset is a classifier unless its config names a per-token head (the masked LMs as
      // published, BERT-large for question answering), whatever bare architecture it names.
      if (pc.config.checkpoint_head == Head::none) pc.config.checkpoint_head = Head::sequence_classification;
      pc.config.classification_head = pc.config.checkpoint_head == Head::sequence_classification;
      return pc;
    }
  }
  throw unknown_preset(name);
}

Error unknown_preset(const std::string& name) {
  std::string list;
  for (const auto& p : kPresets) list += std::string("\n  preset:") + p.name + "  " + p.description;
  for (const auto& n : decoder_preset_list()) list += "\n  preset:" + n + "  " + decoder_preset_description(n);
  return Error("unknown preset '" + name + "'. Presets:" + list);
}

std::vector<std::string> all_preset_names() {
  std::vector<std::string> v = encoder_preset_list();
  for (auto& n : decoder_preset_list()) v.push_back(n);
  return v;
}

std::string preset_model_type(const std::string& name) {
  for (const auto& p : kPresets)
    if (name == p.name) return nlohmann::json::parse(p.config_json).at("model_type").get<std::string>();
  if (is_decoder_preset(name))
    return nlohmann::json::parse(decoder_preset_json(name)).at("model_type").get<std::string>();
  throw unknown_preset(name);
}

}  // namespace tach::model
