// Qwen3 (dense): q/k RMSNorm per head before RoPE, a head_dim of its own, no biases unless
// attention_bias; sliding layers as Qwen2's.
#include "model/config_fields.h"
#include "model/decoder_config.h"
#include "model/decoder_model.h"
#include "model/family.h"

namespace tach::model {

void read_qwen_sliding_window(const Field& f, DecoderConfig& c);  // model/qwen2.cc

namespace {

void read_qwen3(const Field& f, DecoderConfig& c) {
  const std::string act = f.str("hidden_act", "silu");
  if (act != "silu") f.fail("hidden_act", "is \"" + act + "\"; Qwen3 in tach runs silu");
  c.qkv_bias = c.o_bias = f.flag("attention_bias", false);
  c.qk_norm = true;
  read_qwen_sliding_window(f, c);
}

const DecoderFamily kQwen3{"Qwen3ForCausalLM", 10000.0, false, DecoderTensorNames{}, read_qwen3};

}  // namespace

ModelFamily qwen3_family() {
  ModelFamily f =
      with_per_token_heads(decoder_family_row("Qwen3 decoders (dense; Qwen3-Embedding)", "qwen3", "Qwen3Model",
                                              "Qwen3ForSequenceClassification", &kQwen3, "Qwen/Qwen3-0.6B"),
                           "Qwen3", "transformer.");
  f.pruning.layer_types = true;  // as Qwen2's; q_norm and k_norm are per head_dim, shared by every head
  return f;
}

}  // namespace tach::model
