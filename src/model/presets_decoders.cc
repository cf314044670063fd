// Decoder presets: published configs with synthetic weights, so that benchmarks run without a
// download. Qwen2.5-0.5B (../shared/configs/qwen2.5-0.5b-instruct.config.json) as a 23-label
// intent classifier and a tiny Qwen2 with the same vocabulary; Llama 3.2 1B, SmolLM2-135M,
// Qwen3-0.6B, Gemma 3 1B and Mistral 7B as their causal LMs, and ModernBERT-base as a classifier,
// each config.json as published on the Hub (fields tach does not read kept, so the text is the
// published one).
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

// meta-llama/Llama-3.2-1B config.json.
constexpr const char* kLlama32_1b = R"json({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 128256
})json";

// HuggingFaceTB/SmolLM2-135M config.json.
constexpr const char* kSmolLM2_135m = R"json({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 0,
  "eos_token_id": 0,
  "hidden_act": "silu",
  "hidden_size": 576,
  "initializer_range": 0.041666666666666664,
  "intermediate_size": 1536,
  "is_llama_config": true,
  "max_position_embeddings": 8192,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 9,
  "num_hidden_layers": 30,
  "num_key_value_heads": 3,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_interleaved": false,
  "rope_scaling": null,
  "rope_theta": 100000,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 49152
})json";

// Qwen/Qwen3-0.6B config.json.
constexpr const char* kQwen3_06b = R"json({
  "architectures": ["Qwen3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
})json";

// google/gemma-3-1b-pt config.json.
constexpr const char* kGemma3_1b = R"json({
  "architectures": ["Gemma3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "attn_logit_softcapping": null,
  "bos_token_id": 2,
  "cache_implementation": "hybrid",
  "eos_token_id": 1,
  "final_logit_softcapping": null,
  "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 1152,
  "initializer_range": 0.02,
  "intermediate_size": 6912,
  "max_position_embeddings": 32768,
  "model_type": "gemma3_text",
  "num_attention_heads": 4,
  "num_hidden_layers": 26,
  "num_key_value_heads": 1,
  "pad_token_id": 0,
  "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06,
  "rope_local_base_freq": 10000,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": 512,
  "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 262144
})json";

// mistralai/Mistral-7B-v0.1 config.json.
constexpr const char* kMistral7b = R"json({
  "architectures": ["MistralForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 32000
})json";

// answerdotai/ModernBERT-base's published config.json (transformers 4's spelling: global and local
// RoPE bases, global_attn_every_n_layers), as a 2-label sequence classifier (it is published as
// ModernBertForMaskedLM) with its mean pooling.
constexpr const char* kModernBertBase = R"json({
  "architectures": ["ModernBertForSequenceClassification"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 50281,
  "classifier_activation": "gelu",
  "classifier_bias": false,
  "classifier_dropout": 0.0,
  "classifier_pooling": "mean",
  "cls_token_id": 50281,
  "decoder_bias": true,
  "deterministic_flash_attn": false,
  "embedding_dropout": 0.0,
  "eos_token_id": 50282,
  "global_attn_every_n_layers": 3,
  "global_rope_theta": 160000.0,
  "gradient_checkpointing": false,
  "hidden_activation": "gelu",
  "hidden_size": 768,
  "initializer_cutoff_factor": 2.0,
  "initializer_range": 0.02,
  "intermediate_size": 1152,
  "layer_norm_eps": 1e-05,
  "local_attention": 128,
  "local_rope_theta": 10000.0,
  "max_position_embeddings": 8192,
  "mlp_bias": false,
  "mlp_dropout": 0.0,
  "model_type": "modernbert",
  "norm_bias": false,
  "norm_eps": 1e-05,
  "num_attention_heads": 12,
  "num_hidden_layers": 22,
  "pad_token_id": 50283,
  "position_embedding_type": "absolute",
  "sep_token_id": 50282,
  "tie_word_embeddings": true,
  "torch_dtype": "float32",
  "vocab_size": 50368
})json";

struct DecoderPreset {
  const char* name;
  const char* description;
  const char* config_json;
};

constexpr DecoderPreset kDecoderPresets[] = {
    {"qwen2.5-0.5b",
     "Qwen2.5-0.5B, 24 layers, 494M parameters, 14 query / 2 key-value heads, 23-label intent-classification head",
     kQwen25_05b},
    {"qwen2-tiny", "Qwen2 tiny: Qwen2.5's vocabulary, 2 layers, hidden 112, 7 query / 1 key-value heads, 23-label head",
     kQwen2Tiny},
    {"llama-3.2-1b", "Llama 3.2 1B causal LM, 16 layers, 1.24B parameters, 32 query / 8 key-value heads, llama3 RoPE",
     kLlama32_1b},
    {"smollm2-135m", "SmolLM2-135M causal LM (Llama), 30 layers, 135M parameters, 9 query / 3 key-value heads",
     kSmolLM2_135m},
    {"qwen3-0.6b", "Qwen3-0.6B causal LM, 28 layers, 596M parameters, head_dim 128, q/k norms", kQwen3_06b},
    {"gemma-3-1b", "Gemma 3 1B causal LM, 26 layers, 1.0B parameters, 5 of 6 layers sliding (window 512), GeGLU",
     kGemma3_1b},
    {"mistral-7b", "Mistral 7B v0.1 causal LM, 32 layers, 7.24B parameters, sliding window 4096", kMistral7b},
    {"modernbert-base",
     "ModernBERT-base encoder, 22 layers, 150M parameters, 2 of 3 layers local (128 keys), "
     "8192 positions, mean-pooled 2-label head",
     kModernBertBase},
};

const DecoderPreset* find_preset(const std::string& name) {
  for (const auto& p : kDecoderPresets)
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace

std::vector<std::string> decoder_preset_list() {
  std::vector<std::string> v;
  for (const auto& p : kDecoderPresets) v.emplace_back(p.name);
  return v;
}

bool is_decoder_preset(const std::string& name) { return find_preset(name) != nullptr; }

std::string decoder_preset_json(const std::string& name) {
  const DecoderPreset* p = find_preset(name);
  if (!p) throw unknown_preset(name);
  return p->config_json;
}

std::string decoder_preset_description(const std::string& name) {
  const DecoderPreset* p = find_preset(name);
  if (!p) throw unknown_preset(name);
  return p->description;
}

DecoderPresetConfig decoder_preset_config(const std::string& name) {
  const DecoderPreset* p = find_preset(name);
  if (!p) throw unknown_preset(name);
  return {parse_decoder_config_text(p->config_json, "preset:" + name + " config"), p->description, p->config_json};
}

}  // namespace tach::model
