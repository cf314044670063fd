// Qwen2 presets: the real Qwen2.5-0.5B config (../shared/configs/qwen2.5-0.5b-instruct.config.json)
// as a 23-label intent classifier, and a tiny model with the same vocabulary, both with
// synthetic weights. Their embeddings are tied, so they also generate (with the tied LM head).
#include "model/presets.h"
#include "tach/error.h"

namespace tach::model {

namespace {

// ../shared/configs/qwen2.5-0.5b-instruct.config.json, as Qwen2ForSequenceClassification with
// 23 labels and <|endoftext|> as the pad token (as fine-tuned Qwen2 classifiers set it).
constexpr const char* kQwen25_05b = R"json({
  "architectures": ["Qwen2ForSequenceClassification"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 21,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "num_labels": 23,
  "pad_token_id": 151643,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "float32",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})json";

// Qwen2.5's vocabulary and attention layout (7:1 query to key/value heads), tiny elsewhere.
constexpr const char* kQwen2Tiny = R"json({
  "architectures": ["Qwen2ForSequenceClassification"],
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "hidden_size": 112,
  "intermediate_size": 256,
  "max_position_embeddings": 32768,
  "model_type": "qwen2",
  "num_attention_heads": 7,
  "num_hidden_layers": 2,
  "num_key_value_heads": 1,
  "num_labels": 23,
  "pad_token_id": 151643,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "tie_word_embeddings": true,
  "vocab_size": 151936
})json";

struct Qwen2Preset {
  const char* name;
  const char* description;
  const char* config_json;
};

constexpr Qwen2Preset kQwen2Presets[] = {
    {"qwen2.5-0.5b", "Qwen2.5-0.5B, 24 layers, 494M parameters, 14 query / 2 key-value heads, 23-label intent-classification head",
     kQwen25_05b},
    {"qwen2-tiny", "Qwen2 tiny: Qwen2.5's vocabulary, 2 layers, hidden 112, 7 query / 1 key-value heads, 23-label head",
     kQwen2Tiny},
};

}  // namespace

std::vector<std::string> qwen2_preset_list() {
  std::vector<std::string> v;
  for (const auto& p : kQwen2Presets) v.emplace_back(p.name);
  return v;
}

bool is_qwen2_preset(const std::string& name) {
  for (const auto& p : kQwen2Presets)
    if (name == p.name) return true;
  return false;
}

Qwen2PresetConfig qwen2_preset_config(const std::string& name) {
  for (const auto& p : kQwen2Presets)
    if (name == p.name) return {parse_qwen2_config_text(p.config_json, "preset:" + name + " config"), p.description, p.config_json};
  throw Error("unknown Qwen2 preset '" + name + "'");
}

}  // namespace tach::model
