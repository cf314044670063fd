// Gemma 3 text (model_type gemma3_text): GeGLU with gelu_pytorch_tanh, RMSNorm as (1 + w) with
// norms on the attention and MLP outputs too, q/k norms, embeddings scaled by sqrt(hidden), scores
// by query_pre_attn_scalar^-1/2; five of every six layers sliding (sliding_window_pattern, or
// layer_types) with their own RoPE base (rope_local_base_freq); final logit softcapping.
#include "model/config_fields.h"
#include "model/decoder_config.h"
#include "model/decoder_model.h"
#include "model/family.h"

namespace tach::model {

namespace {

void read_gemma3(const Field& f, DecoderConfig& c) {
  const std::string act = f.str("hidden_activation", f.str("hidden_act", "gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh")
    f.fail("hidden_activation", "is \"" + act + "\"; Gemma 3 in tach runs gelu_pytorch_tanh");
  c.activation = ops::GateActivation::gelu_tanh;
  c.qkv_bias = c.o_bias = f.flag("attention_bias", false);
  c.qk_norm = c.norm_plus_one = c.sandwich_norms = c.scale_embeddings = true;
  c.query_pre_attn_scalar = positive_number(f, f.root, "query_pre_attn_scalar", 256);
  c.has_local_rope = true;  // its local layers' base: rope_local_base_freq (default 10000)
  // Without layer_types: every pattern-th layer global, the others sliding (transformers' rule).
  const int64_t window = f.has("sliding_window") ? f.positive_int("sliding_window", 0, true) : 4096;
  const int64_t pattern = f.positive_int("sliding_window_pattern", 6, false);
  for (int64_t i = 0; i < c.num_layers; ++i) c.layer_window[size_t(i)] = (i + 1) % pattern ? window : 0;
}

DecoderTensorNames gemma_names() {
  DecoderTensorNames n;
  n.mlp_norm = "pre_feedforward_layernorm";
  n.attn_out_norm = "post_attention_layernorm";
  n.mlp_out_norm = "post_feedforward_layernorm";
  return n;
}

const DecoderFamily kGemma3{"Gemma3ForCausalLM", 1000000.0, true, gemma_names(), read_gemma3};

}  // namespace

ModelFamily gemma3_family() {
  ModelFamily f = decoder_family_row("Gemma 3 text decoders", "gemma3_text", "Gemma3TextModel",
                                     "Gemma3TextForSequenceClassification", &kGemma3, "google/gemma-3-1b-pt");
  f.pruning.layer_types = true;  // every sliding_window_pattern-th layer is global, counted from layer 0
  return f;
}

}  // namespace tach::model
