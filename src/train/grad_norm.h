// Clipping by the global gradient norm, as torch.nn.utils.clip_grad_norm_ (L2 over every
// gradient of every parameter together), over the ops of ops/grad_norm.h.
#pragma once

#include <vector>

#include "tach/tensor.h"

namespace tach::train {

// The norm over every element of grads (f32, on one device), summed in double in a fixed order
// (deterministic). When it is finite and max_norm > 0, every gradient is multiplied by
// min(1, max_norm / (norm + 1e-6)) as torch does; max_norm <= 0 only measures. Returns the norm
// before clipping.
double clip_grad_norm(const std::vector<Tensor>& grads, double max_norm);

}  // namespace tach::train
