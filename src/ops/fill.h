// Zeroing a buffer that a kernel then accumulates into (training gradients add with +=): an op
// of its own, so that the profile counts the bytes it writes and a device's kernel can do it.
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// t: any contiguous tensor, set to zero bytes (0.0f for f32), as the op "zero".
void fill_zero(const Tensor& t);
OpCost fill_zero_cost(int64_t bytes);

}  // namespace tach::ops
