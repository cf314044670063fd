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
  c.qkv_bias = c.o_bias = f.has("attention_bias") && f.root["attention_bias"].get<bool>();
  c.qk_norm = true;
  read_qwen_sliding_window(f, c);
}

const DecoderFamily kQwen3{"Qwen3ForCausalLM", 10000.0, false, DecoderTensorNames{}, read_qwen3};

}  // namespace

ModelFamily qwen3_family() {
  ModelFamily f;
  f.name = "Qwen3 decoders (dense; Qwen3-Embedding)";
  f.model_types = {"qwen3"};
  f.body_prefix = "model.";
  f.probe = "embed_tokens.weight";
  f.classifier_weight = "score.weight";
  f.head_modules = {"score"};
  f.lm_head = "lm_head";
  f.bare_architecture = "Qwen3Model";
  f.classifier_architecture = "Qwen3ForSequenceClassification";
  f.lora_targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
  f.tokenizer_hint = "Qwen/Qwen3-0.6B";
  f.decoder = &kQwen3;
  f.load = load_decoder;
  f.summarize = summarize_decoder;
  return f;
}

}  // namespace tach::model
