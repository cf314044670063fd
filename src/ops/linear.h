// Linear layer: out = act(x · Wᵀ + b), with W packed once at load (cpu/packed_linear.h).
#pragma once

#include "cpu/packed_linear.h"
#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// x: [M, K] f32 (rows may be strided)  W: [N, K] packed  out: [M, N] f32
// Inference: the packed weight is a cache over the master weight; nothing is saved.
void linear_forward(Tensor& out, const Tensor& x, const cpu::PackedLinear& weight);
OpCost linear_cost(int64_t M, int64_t N, int64_t K, DType compute, bool has_bias);

// Training works on the plain f32 master weight (the optimizer updates it in place, so a
// packed copy would have to be rebuilt after every step). The caller keeps x for the backward.
// x: [M, K]  W: [N, K]  b: [N] or null  y: [M, N] (y = x · Wᵀ + b)
void linear_forward_cpu(float* y, const float* x, const float* W, const float* b, int64_t M, int64_t N, int64_t K);
// dy: [M, N]  x: [M, K] (saved input)  W: [N, K]
// dx: [M, K] += dy · W (skipped when null)   dW: [N, K] += dyᵀ · x (skipped when null: a frozen weight)
// db: [N] += Σ_m dy (when not null)
void linear_backward_cpu(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W, int64_t M,
                         int64_t N, int64_t K);
OpCost linear_backward_cost(int64_t M, int64_t N, int64_t K, bool has_bias, bool needs_dx, bool needs_dw = true);

}  // namespace tach::ops
