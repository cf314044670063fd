// Binding a Qwen2 checkpoint into the parameter table, and sizing the saved activations.
#include "train/trainable_qwen2.h"

#include "tach/error.h"

namespace tach::train {

TrainableQwen2 build_trainable_qwen2(const model::Qwen2Config& config, model::WeightBinder& w, uint64_t init_seed,
                                     std::vector<std::string>* notes) {
  check(config.num_labels() >= 1, "training needs a classification head: the model has no labels");
  TrainableQwen2 m;
  m.config = config;
  m.shape = model::qwen2_shape(config);
  const int64_t C = config.hidden_size, I = config.intermediate_size, D = config.head_dim;
  const int64_t HD = config.num_heads * D, KD = config.num_kv_heads * D, L = config.num_labels();
  ParameterTable& t = m.params;
  // Names as Qwen2ForSequenceClassification saves them ("model." + the decoder's own), whatever
  // prefix the checkpoint used.
  auto decoder = [&](const std::string& name, const Shape& shape) -> Parameter& {
    return t.add("model." + name, w.take(name, shape));
  };
  m.embed = &decoder("embed_tokens.weight", {config.vocab_size, C});
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".", P = "model." + p;
    TrainableQwen2Layer layer;
    layer.input_norm = &decoder(p + "input_layernorm.weight", {C});
    const std::string a = p + "self_attn.";
    layer.qkv_weight = t.add_fused(P + "self_attn.qkv.weight", {{"model." + a + "q_proj.weight", w.take(a + "q_proj.weight", {HD, C})},
                                                                 {"model." + a + "k_proj.weight", w.take(a + "k_proj.weight", {KD, C})},
                                                                 {"model." + a + "v_proj.weight", w.take(a + "v_proj.weight", {KD, C})}});
    layer.qkv_bias = t.add_fused(P + "self_attn.qkv.bias", {{"model." + a + "q_proj.bias", w.take(a + "q_proj.bias", {HD})},
                                                             {"model." + a + "k_proj.bias", w.take(a + "k_proj.bias", {KD})},
                                                             {"model." + a + "v_proj.bias", w.take(a + "v_proj.bias", {KD})}});
    layer.o_proj = &decoder(a + "o_proj.weight", {C, HD});
    layer.post_norm = &decoder(p + "post_attention_layernorm.weight", {C});
    layer.gate_up = t.add_fused(P + "mlp.gate_up.weight", {{P + "mlp.gate_proj.weight", w.take(p + "mlp.gate_proj.weight", {I, C})},
                                                            {P + "mlp.up_proj.weight", w.take(p + "mlp.up_proj.weight", {I, C})}});
    layer.down = &decoder(p + "mlp.down_proj.weight", {C, I});
    m.layers.push_back(layer);
  }
  m.final_norm = &decoder("norm.weight", {C});
  if (w.has_head("score.weight")) {
    m.score = &t.add("score.weight", w.take_head("score.weight", {L, C}));
  } else {
    Tensor init = Tensor::empty({L, C}, DType::f32, Device::cpu(), MemoryCategory::workspace);
    model::fill_normal(init, config.initializer_range, init_seed, "score.weight");
    m.score = &t.add("score.weight", init);
    if (notes)
      notes->push_back("newly initialised (the checkpoint has none): score — weights N(0, " +
                       std::to_string(config.initializer_range) + "), no bias, seed " + std::to_string(init_seed));
  }
  if (notes)
    for (auto& n : w.finish()) notes->push_back(n);
  return m;
}

std::unique_ptr<ForwardState> TrainableQwen2::new_state(bool fused) const {
  auto s = std::make_unique<Qwen2Activations>();
  s->fused = fused;
  return s;
}

int64_t TrainableQwen2::quantize_base_nf4() {
  int64_t n = 0;
  for (auto& l : layers) {
    if (!any_part_trainable(params, l.qkv_weight)) params.quantize_nf4(l.qkv_weight), n += 3;
    if (!any_part_trainable(params, l.gate_up)) params.quantize_nf4(l.gate_up), n += 2;
    for (Parameter* p : {l.o_proj, l.down})
      if (!p->trainable) params.quantize_nf4(*p), ++n;
  }
  return n;
}

}  // namespace tach::train

namespace tach::train {

std::vector<LinearSite> TrainableQwen2::linear_sites() {
  const int64_t C = config.hidden_size, I = config.intermediate_size, D = config.head_dim;
  const int64_t HD = config.num_heads * D, KD = config.num_kv_heads * D;
  std::vector<LinearSite> sites;
  for (size_t i = 0; i < layers.size(); ++i) {
    TrainableQwen2Layer& l = layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    sites.push_back({p + "self_attn.q_proj", C, HD, 0, &l.qkv_lora});
    sites.push_back({p + "self_attn.k_proj", C, KD, HD, &l.qkv_lora});
    sites.push_back({p + "self_attn.v_proj", C, KD, HD + KD, &l.qkv_lora});
    sites.push_back({p + "self_attn.o_proj", HD, C, 0, &l.o_lora});
    sites.push_back({p + "mlp.gate_proj", C, I, 0, &l.gate_up_lora});
    sites.push_back({p + "mlp.up_proj", C, I, I, &l.gate_up_lora});
    sites.push_back({p + "mlp.down_proj", I, C, 0, &l.down_lora});
  }
  return sites;
}

void TrainableQwen2::release_frozen_grads() {
  for (auto& l : layers)
    for (FusedTensor* t : {&l.qkv_weight, &l.qkv_bias, &l.gate_up})
      if (!any_part_trainable(params, *t)) t->grad = Tensor();
}

}  // namespace tach::train
