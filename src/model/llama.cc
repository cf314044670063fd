// Llama (2, 3.x; SmolLM2, TinyLlama and DeepSeek's Llama-shaped models) and Mistral: biases where
// attention_bias and mlp_bias say, llama3 RoPE; Mistral's sliding window on every layer.
#include "model/config_fields.h"
#include "model/decoder_config.h"
#include "model/decoder_model.h"
#include "model/family.h"

namespace tach::model {

namespace {

void read_silu(const Field& f, const char* family) {
  const std::string act = f.str("hidden_act", "silu");
  if (act != "silu") f.fail("hidden_act", "is \"" + act + "\"; " + family + " in tach runs silu");
}

void read_llama(const Field& f, DecoderConfig& c) {
  read_silu(f, "Llama");
  const bool bias = f.flag("attention_bias", false);
  c.qkv_bias = c.o_bias = bias;
  c.mlp_bias = f.flag("mlp_bias", false);
  if (f.flag("rope_interleaved", false))
    f.fail("rope_interleaved", "is true; tach rotates halves (rotate_half), as transformers' Llama does");
}

void read_mistral(const Field& f, DecoderConfig& c) {
  read_silu(f, "Mistral");
  if (f.has("sliding_window")) c.layer_window.assign(size_t(c.num_layers), f.positive_int("sliding_window", 0, true));
}

const DecoderFamily kLlama{"LlamaForCausalLM", 10000.0, false, DecoderTensorNames{}, read_llama};
const DecoderFamily kMistral{"MistralForCausalLM", 10000.0, false, DecoderTensorNames{}, read_mistral};

}  // namespace

ModelFamily llama_family() {
  return with_per_token_heads(
      decoder_family_row("Llama decoders (Llama 2/3.x, SmolLM2, TinyLlama)", "llama", "LlamaModel",
                         "LlamaForSequenceClassification", &kLlama, "meta-llama/Llama-3.2-1B"),
      "Llama", "transformer.");
}

ModelFamily mistral_family() {
  return with_per_token_heads(
      decoder_family_row("Mistral decoders", "mistral", "MistralModel", "MistralForSequenceClassification", &kMistral,
                         "mistralai/Mistral-7B-v0.1"),
      "Mistral", "model.");
}

}  // namespace tach::model
