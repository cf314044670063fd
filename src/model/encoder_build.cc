#include "model/encoder_build.h"

#include <cstring>

#include "model/activation_dtype.h"
#include "model/family.h"
#include "tach/error.h"

namespace tach::model {

EncoderShape encoder_shape(const EncoderConfig& c) {
  EncoderShape s;
  s.layers = c.num_layers;
  s.hidden = c.hidden_size;
  s.heads = c.num_heads;
  if (!c.pruned_heads.empty())
    for (int64_t l = 0; l < c.num_layers; ++l) s.layer_heads.push_back(c.heads_in_layer(l));
  s.intermediate = c.intermediate_size;
  s.vocab = c.vocab_size;
  s.max_positions = c.max_position_embeddings;
  s.type_vocab = c.type_vocab_size;
  s.eps = c.layer_norm_eps;
  s.module = c.family->module;
  s.layer_prefix = c.family->names.layer;
  s.position_pad = c.family->positions_after_padding ? int32_t(c.pad_token_id) : -1;
  if (!c.family->names.relative_bias.empty()) {
    s.relative_buckets = c.family->relative_buckets;
    s.relative_max_distance = c.family->relative_max_distance;
  }
  return s;
}

BuiltEncoder build_encoder(const EncoderConfig& c, const ModelFamily& row, WeightBinder& w,
                           const ops::LinearPlacement& place, Head head, int64_t labels, HeadSource& source) {
  const EncoderFamily& family = *c.family;
  const EncoderTensorNames& n = family.names;
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  BuiltEncoder m;
  m.shape = encoder_shape(c);
  EncoderWeights& e = m.weights;
  e.word_embeddings = on_device(w.take("embeddings.word_embeddings.weight", {c.vocab_size, C}), place.device);
  e.position_embeddings =
      on_device(w.take("embeddings.position_embeddings.weight", {c.max_position_embeddings, C}), place.device);
  if (family.token_types)
    e.token_type_embeddings =
        on_device(w.take("embeddings.token_type_embeddings.weight", {c.type_vocab_size, C}), place.device);
  take_layer_norm(w, "embeddings.LayerNorm", C, &e.emb_ln_gamma, &e.emb_ln_beta, place.device);
  if (!n.relative_bias.empty())
    e.relative_bias =
        to_f32_param(w.take(n.relative_bias + ".weight", {c.relative_attention_buckets, c.num_heads}), place.device);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = n.layer + std::to_string(i) + ".";
    EncoderLayer L;
    const int64_t A = c.heads_in_layer(i) * c.head_dim();  // C unless heads were pruned
    Tensor wq = w.take(p + n.q + ".weight", {A, C}), bq = w.take(p + n.q + ".bias", {A});
    Tensor wk = w.take(p + n.k + ".weight", {A, C}), bk = w.take(p + n.k + ".bias", {A});
    Tensor wv = w.take(p + n.v + ".weight", {A, C}), bv = w.take(p + n.v + ".bias", {A});
    L.qkv = pack_linear(concat_rows(wq, wk, wv), concat_rows(bq, bk, bv), place);
    L.attn_out = take_linear(w, p + n.out, C, A, place);
    take_layer_norm(w, p + n.ln1, C, &L.ln1_gamma, &L.ln1_beta, place.device);
    L.ffn_in = take_linear(w, p + n.ffn_in, I, C, place, ffn_activation(c));
    L.ffn_out = take_linear(w, p + n.ffn_out, C, I, place);
    take_layer_norm(w, p + n.ln2, C, &L.ln2_gamma, &L.ln2_beta, place.device);
    e.layers.push_back(std::move(L));
  }
  if (!e.layers.empty()) e.activations = inference_activations(*e.layers.front().qkv);
  m.shape.compute = place.compute, m.shape.embeddings = e.word_embeddings.dtype(), m.shape.activations = e.activations;
  m.head = build_encoder_head(c, row, head, labels, w, source, e.word_embeddings, place);
  return m;
}

Tensor to_f32_param(const Tensor& t, Device device) {
  if (device.kind == DeviceKind::cpu) return t.to(DType::f32, MemoryCategory::weights);
  return t.to(DType::f32, MemoryCategory::workspace).to_device(device, MemoryCategory::weights);
}

Tensor on_device(const Tensor& t, Device device) { return t.on(device, MemoryCategory::weights); }

Tensor concat_rows(const Tensor& a, const Tensor& b, const Tensor& c) { return concat_rows({&a, &b, &c}); }

Tensor concat_rows(const std::vector<const Tensor*>& parts) {
  int64_t rows = 0;
  for (const Tensor* t : parts) rows += t->size(0);
  Shape shape = parts.front()->shape();
  shape[0] = rows;
  Tensor out = Tensor::empty(shape, DType::f32, Device::cpu(), MemoryCategory::workspace);
  char* dst = static_cast<char*>(out.raw());
  for (const Tensor* t : parts) {
    Tensor f = t->to(DType::f32, MemoryCategory::workspace);
    std::memcpy(dst, f.raw(), f.nbytes());
    dst += f.nbytes();
  }
  return out;
}

std::unique_ptr<ops::Linear> pack_linear(const Tensor& weight, const Tensor& bias, const ops::LinearPlacement& place,
                                         cpu::FusedActivation act) {
  return std::make_unique<ops::Linear>(weight, bias, place, act);
}

cpu::FusedActivation ffn_activation(const EncoderConfig& c) {
  return c.hidden_act == "relu" ? cpu::FusedActivation::relu : cpu::FusedActivation::gelu_erf;
}

std::unique_ptr<ops::Linear> take_linear(WeightBinder& w, const std::string& name, int64_t out, int64_t in,
                                         const ops::LinearPlacement& place, cpu::FusedActivation act) {
  Tensor weight = w.take(name + ".weight", {out, in});
  Tensor bias = w.take(name + ".bias", {out});
  return pack_linear(weight, bias, place, act);
}

void take_layer_norm(WeightBinder& w, const std::string& name, int64_t width, Tensor* gamma, Tensor* beta,
                     Device device) {
  *gamma = to_f32_param(w.take(name + ".weight", {width}), device);
  *beta = to_f32_param(w.take(name + ".bias", {width}), device);
}

}  // namespace tach::model
