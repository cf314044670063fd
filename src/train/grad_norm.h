// Clipping by the global gradient norm, as torch.nn.utils.clip_grad_norm_ (L2 over every
// gradient of every parameter together).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tach::train {

using GradList = std::vector<std::pair<float*, int64_t>>;  // (pointer, count) per parameter

// The L2 norm over every element, summed in double in a fixed order (deterministic).
double global_grad_norm(const GradList& grads);
// Multiplies every gradient by min(1, max_norm / (norm + 1e-6)), as torch does.
void scale_to_norm(const GradList& grads, double norm, double max_norm);
// Both: returns the norm before clipping; max_norm <= 0 only measures.
double clip_grad_norm(const GradList& grads, double max_norm);

}  // namespace tach::train
