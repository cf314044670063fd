// RMSNorm over the last dimension (Qwen2, Llama), with the residual add of a pre-norm block
// fused in: h += delta, then out = weight * h / sqrt(mean(h^2) + eps).
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// h: [N, C] f32, updated in place when delta is given  delta: [N, C] f32 or undefined
// weight: [C] f32  out: [N, C] f32 (must not alias h)
// For the backward this would save rstd per row ([N]); inference keeps nothing.
void rms_norm_forward(Tensor& out, Tensor& h, const Tensor& delta, const Tensor& weight, float eps);
OpCost rms_norm_cost(int64_t N, int64_t C, bool with_residual);

// Kernel. Sum of squares in f32, as transformers' Qwen2RMSNorm computes it in f32.
void rms_norm_forward_cpu(float* out, float* h, const float* delta, const float* weight, int64_t N, int64_t C, float eps);

}  // namespace tach::ops
