// Building an encoder from bound tensors: the family row (bert.cc, distilbert.cc, roberta.cc)
// names the tensors; build_encoder binds them, and these helpers pack and convert them.
#pragma once

#include <memory>

#include "ops/linear.h"
#include "model/config.h"
#include "model/encoder.h"
#include "model/encoder_heads.h"
#include "model/weight_binder.h"

namespace tach::model {

struct BuiltEncoder {
  EncoderWeights weights;
  EncoderShape shape;
  EncoderHead head;  // Head::none for a bare encoder
};

// Binds and packs the body under the row's names, then `head` (labels: a classifier's outputs)
// from `source` (encoder_heads.h).
BuiltEncoder build_encoder(const EncoderConfig& config, const ModelFamily& family, WeightBinder& binder,
                           const ops::LinearPlacement& place, Head head, int64_t labels, HeadSource& source);

EncoderShape encoder_shape(const EncoderConfig& config);

// Small parameters (LayerNorm, biases) are kept in f32, on the device the model runs on.
Tensor to_f32_param(const Tensor& t, Device device = Device::cpu());
// A tensor kept in its stored dtype (embedding tables): the CPU uses it where it is (a view of
// the mapped file), a GPU gets a copy.
Tensor on_device(const Tensor& t, Device device);
// Stacks [q; k; v] rows into one [3C, C] matrix (and their biases into [3C]).
Tensor concat_rows(const Tensor& a, const Tensor& b, const Tensor& c);
Tensor concat_rows(const std::vector<const Tensor*>& parts);
std::unique_ptr<ops::Linear> pack_linear(const Tensor& weight, const Tensor& bias, const ops::LinearPlacement& place,
                                         cpu::FusedActivation act = cpu::FusedActivation::none);
cpu::FusedActivation ffn_activation(const EncoderConfig& config);

// Takes the body's NAME.weight [out, in], then NAME.bias [out], and packs them. The order is fixed
// so that a checkpoint with several bad tensors always reports the same one first. (Heads take
// theirs through encoder_heads.h's take_head_tensor.)
std::unique_ptr<ops::Linear> take_linear(WeightBinder& w, const std::string& name, int64_t out, int64_t in,
                                         const ops::LinearPlacement& place,
                                         cpu::FusedActivation act = cpu::FusedActivation::none);
// Takes NAME.weight and NAME.bias of a LayerNorm over `width` as f32.
void take_layer_norm(WeightBinder& w, const std::string& name, int64_t width, Tensor* gamma, Tensor* beta,
                     Device device = Device::cpu());

}  // namespace tach::model
