// LayerNorm over the last dimension, with an optional residual added first (post-LN
// transformers compute LayerNorm(x + residual)).
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// x: [N, C] f32  residual: [N, C] f32 or undefined  gamma, beta: [C] f32  out: [N, C] f32
// out may alias x. For the backward this would save mean and rstd per row ([N] each); the
// inference path does not keep them.
void layer_norm_forward(Tensor& out, const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                        float eps);
OpCost layer_norm_cost(int64_t N, int64_t C, bool with_residual);

// Kernel. Statistics in double-free two-pass f32 (mean first, then variance about the mean)
// to match PyTorch's numerics to ~1e-6.
void layer_norm_forward_cpu(float* out, const float* x, const float* residual, const float* gamma, const float* beta,
                            int64_t N, int64_t C, float eps);

}  // namespace tach::ops
