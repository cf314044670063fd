// The mean over each sequence's kept tokens, (x * mask).sum(1) / mask.sum(1), as ModernBERT's
// sequence classifier pools its final hidden states (classifier_pooling "mean"), and its backward.
// Training's op: f32 sums in token order, so the CPU and CUDA kernels give the same bits, and the
// mask is read where it lives, so a GPU step copies nothing to the host. (Inference's
// sentence-transformers pooling, ops/pooling.h, sums in double and clamps the count.)
// A row whose mask keeps no token divides by 0 (NaN), as transformers' (h * mask).sum / mask.sum.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/dtype.h"
#include "tach/tensor.h"

namespace tach::ops {

// Training entry points: f32 tensors, contiguous, on one device; mask i32, nonzero = keep.
// "masked_mean": x [B * T, C] (rows b * T + t; or [B, T, C])  mask [B, T]  out [B, C], written:
// out[b] = Σ_t mask[b, t] ? x[b, t] : 0, divided by the count of kept t. Nothing is saved: the
// backward reads the mask again. At inference on CUDA x may also be bf16 or f16 (a bf16 model's
// final hidden states, read as f32); out stays f32, since the pooled vector feeds the f32 head.
void masked_mean_forward(const Tensor& out, const Tensor& x, const Tensor& mask);
// "masked_mean_backward": dx [B * T, C] += dout[b] / (kept tokens of row b) at each kept token
// (rows the mask drops get nothing)  dout [B, C]  mask [B, T]
void masked_mean_backward(const Tensor& dx, const Tensor& dout, const Tensor& mask);

OpCost masked_mean_cost(int64_t B, int64_t T, int64_t C, DType x_dtype = DType::f32);
OpCost masked_mean_backward_cost(int64_t B, int64_t T, int64_t C);

// Kernels: x, dx [B * T, C]  mask [B, T]  out, dout [B, C]; sums over t in order, in f32.
void masked_mean_forward_cpu(float* out, const float* x, const int32_t* mask, int64_t B, int64_t T, int64_t C);
void masked_mean_backward_cpu(float* dx, const float* dout, const int32_t* mask, int64_t B, int64_t T, int64_t C);
void masked_mean_forward_cuda(int device, float* out, const float* x, const int32_t* mask, int64_t B, int64_t T,
                              int64_t C);
// x in x_dtype (f32, bf16, f16), out f32.
void masked_mean_forward_cuda(int device, float* out, const void* x, DType x_dtype, const int32_t* mask, int64_t B,
                              int64_t T, int64_t C);
void masked_mean_backward_cuda(int device, float* dx, const float* dout, const int32_t* mask, int64_t B, int64_t T,
                               int64_t C);

}  // namespace tach::ops
