// Binding any decoder family's checkpoint into the parameter table under its Hugging Face names
// (the family row's), and the parts of the model that are not the step.
#include "train/trainable_decoder.h"

#include "tach/error.h"

namespace tach::train {

TrainableDecoder build_trainable_decoder(const model::DecoderConfig& config, const model::ModelFamily& family,
                                         model::WeightBinder& w, uint64_t init_seed, std::vector<std::string>* notes) {
  check(config.num_labels() >= 1, "training needs a classification head: the model has no labels");
  check(family.decoder != nullptr, "build_trainable_decoder: " + std::string(family.name) + " is not a decoder family");
  TrainableDecoder m;
  m.config = config;
  m.body_prefix = family.body_prefix;
  m.names = family.decoder->names;
  m.classifier_architecture = family.classifier_architecture;
  m.embed_scale = model::embedding_scale(config, DType::f32);
  const model::DecoderTensorNames& n = m.names;
  const int64_t C = config.hidden_size, I = config.intermediate_size, D = config.head_dim;
  const int64_t HD = config.num_heads * D, KD = config.num_kv_heads * D, L = config.num_labels();
  const std::string& B = m.body_prefix;
  ParameterTable& t = m.params;
  // Names as the task model saves them (body prefix + the decoder's own), whatever prefix the
  // checkpoint used.
  auto body = [&](const std::string& name, const Shape& shape) -> Parameter& { return t.add(B + name, w.take(name, shape)); };
  auto part = [&](const std::string& name, const Shape& shape) { return std::make_pair(B + name, w.take(name, shape)); };
  m.embed = &body(n.embed + ".weight", {config.vocab_size, C});
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    TrainableDecoderLayer l;
    l.attn_norm = &body(p + n.attn_norm + ".weight", {C});
    l.qkv_weight = t.add_fused(B + p + "self_attn.qkv.weight",
                               {part(p + n.q + ".weight", {HD, C}), part(p + n.k + ".weight", {KD, C}),
                                part(p + n.v + ".weight", {KD, C})});
    if (config.qkv_bias)
      l.qkv_bias = t.add_fused(B + p + "self_attn.qkv.bias", {part(p + n.q + ".bias", {HD}), part(p + n.k + ".bias", {KD}),
                                                              part(p + n.v + ".bias", {KD})});
    if (config.qk_norm) {
      l.q_norm = &body(p + n.q_norm + ".weight", {D});
      l.k_norm = &body(p + n.k_norm + ".weight", {D});
    }
    l.o_proj = &body(p + n.o + ".weight", {C, HD});
    if (config.o_bias) l.o_bias = &body(p + n.o + ".bias", {C});
    if (config.sandwich_norms) l.attn_out_norm = &body(p + n.attn_out_norm + ".weight", {C});
    l.mlp_norm = &body(p + n.mlp_norm + ".weight", {C});
    l.gate_up = t.add_fused(B + p + "mlp.gate_up.weight", {part(p + n.gate + ".weight", {I, C}), part(p + n.up + ".weight", {I, C})});
    if (config.mlp_bias)
      l.gate_up_bias = t.add_fused(B + p + "mlp.gate_up.bias", {part(p + n.gate + ".bias", {I}), part(p + n.up + ".bias", {I})});
    l.down = &body(p + n.down + ".weight", {C, I});
    if (config.mlp_bias) l.down_bias = &body(p + n.down + ".bias", {C});
    if (config.sandwich_norms) l.mlp_out_norm = &body(p + n.mlp_out_norm + ".weight", {C});
    m.layers.push_back(l);
  }
  m.final_norm = &body(n.final_norm + ".weight", {C});
  if (w.has_head(family.classifier_weight)) {
    m.score = &t.add(family.classifier_weight, w.take_head(family.classifier_weight, {L, C}));
  } else {
    Tensor init = Tensor::empty({L, C}, DType::f32, Device::cpu(), MemoryCategory::workspace);
    model::fill_normal(init, config.initializer_range, init_seed, family.classifier_weight);
    m.score = &t.add(family.classifier_weight, init);
    if (notes)
      notes->push_back("newly initialised (the checkpoint has none): score — weights N(0, " +
                       std::to_string(config.initializer_range) + "), no bias, seed " + std::to_string(init_seed));
  }
  if (notes)
    for (auto& note : w.finish()) notes->push_back(note);
  return m;
}

std::unique_ptr<ForwardState> TrainableDecoder::new_state(bool fused) const {
  auto s = std::make_unique<DecoderActivations>();
  s->fused = fused;
  return s;
}

const Tensor& TrainableDecoder::norm_weight(const Parameter* p) const {
  if (!config.norm_plus_one) return p->value;
  return applied_norms_.at(p);
}

void TrainableDecoder::refresh_applied_norms() const {
  if (!config.norm_plus_one) return;
  auto refresh = [&](const Parameter* p) {
    if (!p) return;
    Tensor& a = applied_norms_[p];
    if (!a.defined()) a = Tensor::empty(p->value.shape(), DType::f32, Device::cpu(), MemoryCategory::workspace);
    for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = 1.0f + p->value.data<float>()[i];
  };
  for (const auto& l : layers)
    for (const Parameter* p : {l.attn_norm, l.q_norm, l.k_norm, l.attn_out_norm, l.mlp_norm, l.mlp_out_norm}) refresh(p);
  refresh(final_norm);
}

int64_t TrainableDecoder::quantize_base_nf4() {
  int64_t n = 0;
  for (auto& l : layers) {
    if (!any_part_trainable(params, l.qkv_weight)) params.quantize_nf4(l.qkv_weight), n += 3;
    if (!any_part_trainable(params, l.gate_up)) params.quantize_nf4(l.gate_up), n += 2;
    for (Parameter* p : {l.o_proj, l.down})
      if (!p->trainable) params.quantize_nf4(*p), ++n;
  }
  return n;
}

std::vector<LinearSite> TrainableDecoder::linear_sites() {
  const int64_t C = config.hidden_size, I = config.intermediate_size, D = config.head_dim;
  const int64_t HD = config.num_heads * D, KD = config.num_kv_heads * D;
  std::vector<LinearSite> sites;
  for (size_t i = 0; i < layers.size(); ++i) {
    TrainableDecoderLayer& l = layers[i];
    const std::string p = body_prefix + "layers." + std::to_string(i) + ".";
    sites.push_back({p + names.q, C, HD, 0, &l.qkv_lora});
    sites.push_back({p + names.k, C, KD, HD, &l.qkv_lora});
    sites.push_back({p + names.v, C, KD, HD + KD, &l.qkv_lora});
    sites.push_back({p + names.o, HD, C, 0, &l.o_lora});
    sites.push_back({p + names.gate, C, I, 0, &l.gate_up_lora});
    sites.push_back({p + names.up, C, I, I, &l.gate_up_lora});
    sites.push_back({p + names.down, I, C, 0, &l.down_lora});
  }
  return sites;
}

void TrainableDecoder::release_frozen_grads() {
  for (auto& l : layers)
    for (FusedTensor* t : {&l.qkv_weight, &l.qkv_bias, &l.gate_up, &l.gate_up_bias})
      if (!t->name.empty() && !any_part_trainable(params, *t)) t->grad = Tensor();  // name empty: the family has no such bias
}

}  // namespace tach::train
