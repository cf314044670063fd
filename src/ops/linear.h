// Linear layer: out = act(x · Wᵀ + b), with W packed once at load (cpu/packed_linear.h).
#pragma once

#include "cpu/packed_linear.h"
#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// x: [M, K] f32 (rows may be strided)  W: [N, K] packed  out: [M, N] f32
// The backward (with training) will need x saved; inference saves nothing.
void linear_forward(Tensor& out, const Tensor& x, const cpu::PackedLinear& weight);
OpCost linear_cost(int64_t M, int64_t N, int64_t K, DType compute, bool has_bias);

}  // namespace tach::ops
