#include "model/encoder_build.h"

#include <cstring>

#include "tach/error.h"

namespace tach::model {

EncoderShape encoder_shape(const EncoderConfig& c) {
  EncoderShape s;
  s.layers = c.num_layers;
  s.hidden = c.hidden_size;
  s.heads = c.num_heads;
  s.intermediate = c.intermediate_size;
  s.vocab = c.vocab_size;
  s.max_positions = c.max_position_embeddings;
  s.type_vocab = c.type_vocab_size;
  s.eps = c.layer_norm_eps;
  return s;
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
                                         const ops::LinearPlacement& place, cpu::FusedActivation act, Scope scope) {
  const bool head = scope == Scope::head;
  Tensor weight = head ? w.take_head(name + ".weight", {out, in}) : w.take(name + ".weight", {out, in});
  Tensor bias = head ? w.take_head(name + ".bias", {out}) : w.take(name + ".bias", {out});
  return pack_linear(weight, bias, place, act);
}

void take_layer_norm(WeightBinder& w, const std::string& name, int64_t width, Tensor* gamma, Tensor* beta,
                     Device device) {
  *gamma = to_f32_param(w.take(name + ".weight", {width}), device);
  *beta = to_f32_param(w.take(name + ".bias", {width}), device);
}

}  // namespace tach::model
