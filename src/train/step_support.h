// What the families' hand-written training steps share: a parameter's value and gradient as the
// ops' training entry points take them (every kernel is reached through those entry points).
#pragma once

#include "ops/linear.h"
#include "tach/tensor.h"
#include "train/parameters.h"

namespace tach::train {

namespace step {

// A parameter as the ops take it: its master value, and its gradient, undefined for a frozen
// parameter (LoRA's base weights: the ops skip it and do not count it).
inline const Tensor& grad(const Parameter* p) {
  static const Tensor none;
  return p->trainable && p->grad.defined() ? p->grad : none;
}
// A fused tensor's gradient, undefined when every part is frozen.
inline const Tensor& grad(const FusedTensor& t) { return t.grad; }
// A layer linear's weight for ops::linear_forward_train/linear_backward: the f32 master, or NF4.
inline ops::TrainLinearWeight weight(const Parameter* p) {
  return p->nf4 ? ops::TrainLinearWeight(*p->nf4) : ops::TrainLinearWeight(p->value);
}
inline ops::TrainLinearWeight weight(const FusedTensor& t) {
  return t.nf4 ? ops::TrainLinearWeight(*t.nf4) : ops::TrainLinearWeight(t.value);
}

}  // namespace step

}  // namespace tach::train
