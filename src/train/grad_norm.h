// Clipping by the global gradient norm, as torch.nn.utils.clip_grad_norm_ (L2 over every
// gradient of every parameter together).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tach::train {

// grads: (pointer, count) per parameter. Returns the norm before clipping. When max_norm > 0,
// every gradient is multiplied by min(1, max_norm / (norm + 1e-6)), as torch does.
double clip_grad_norm(const std::vector<std::pair<float*, int64_t>>& grads, double max_norm);

}  // namespace tach::train
