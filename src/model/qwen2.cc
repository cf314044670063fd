// Qwen2 and Qwen2.5 (model_type qwen2): biases on q, k and v; sliding windows on the layers from
// max_window_layers on when use_sliding_window is set.
#include "model/config_fields.h"
#include "model/decoder_config.h"
#include "model/decoder_model.h"
#include "model/family.h"

namespace tach::model {

// Qwen2 and Qwen3 share the rule for sliding layers when config.json has no layer_types.
void read_qwen_sliding_window(const Field& f, DecoderConfig& c) {
  const bool use = f.flag("use_sliding_window", false);
  if (!use || !f.has("sliding_window")) return;
  const int64_t window = f.positive_int("sliding_window", 0, true);
  const int64_t from = f.nonneg_int("max_window_layers", c.num_layers);
  for (int64_t i = from; i < c.num_layers; ++i) c.layer_window[size_t(i)] = window;
}

namespace {

void read_qwen2(const Field& f, DecoderConfig& c) {
  const std::string act = f.str("hidden_act", "silu");
  if (act != "silu") f.fail("hidden_act", "is \"" + act + "\"; Qwen2 in tach runs silu");
  c.qkv_bias = true;
  read_qwen_sliding_window(f, c);
}

const DecoderFamily kQwen2{"Qwen2ForCausalLM", 10000.0, false, DecoderTensorNames{}, read_qwen2};

}  // namespace

ModelFamily qwen2_family() {
  ModelFamily f =
      with_per_token_heads(decoder_family_row("Qwen2 decoders (Qwen2, Qwen2.5)", "qwen2", "Qwen2Model",
                                              "Qwen2ForSequenceClassification", &kQwen2, "Qwen/Qwen2.5-0.5B"),
                           "Qwen2", "transformer.");
  f.pruning.layer_types = true;  // max_window_layers counts from layer 0; layer_types keeps each kept layer's kind
  return f;
}

}  // namespace tach::model
