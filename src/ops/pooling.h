// Sentence-embedding pooling: token vectors → one vector per row, as sentence-transformers'
// Pooling module computes it, and the L2 normalisation of its Normalize module.
#pragma once

#include <string>
#include <vector>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// The modes sentence-transformers names in 1_Pooling/config.json (pooling_mode_*). When several
// are on, their vectors are concatenated in this order, as sentence-transformers does.
enum class PoolingMode { cls, max, mean, mean_sqrt_len, weighted_mean, last_token };
const char* pooling_mode_name(PoolingMode mode);  // "cls", "max", "mean", "mean_sqrt_len", ...

// hidden: [B, T, C] A  mask: [B, T] i32 (1 = token)  out: [B, modes.size() * C] f32
// A, the activation dtype: f32, or on CUDA also bf16 or f16 (the CPU refuses another A by name).
// The output stays f32 whatever A is: pooled vectors feed the heads and L2 normalisation, which
// stay f32, so a bf16 model's pooling writes f32 directly (sums in double from the A values, one
// rounding to f32), with no cast after it.
// As sentence-transformers 6 computes them (left or right padding alike):
//   cls:           hidden[b, first t with mask 1]
//   max:           max over real tokens (padding masked to -inf)
//   mean:          Σ real tokens / max(count, 1e-9)
//   mean_sqrt_len: Σ real tokens / sqrt(max(count, 1e-9))
//   weighted_mean: Σ w_t·hidden[b, t] / Σ w_t over real tokens, w = 1, 2, ... from the first real token
//   last_token:    hidden[b, last t with mask 1] (zeros for a row of padding only)
void pooling_forward(Tensor& out, const Tensor& hidden, const Tensor& mask, const std::vector<PoolingMode>& modes);
OpCost pooling_cost(int64_t B, int64_t T, int64_t C, size_t modes, DType hidden_dtype = DType::f32);

// x: [B, E] f32, each row divided in place by max(||row||₂, 1e-12) (torch.nn.functional.normalize).
void l2_normalize_forward(Tensor& x);
OpCost l2_normalize_cost(int64_t B, int64_t E);

// Kernels. out_stride: the distance between rows of out (modes × C when concatenated).
void pooling_forward_cpu(float* out, int64_t out_stride, const float* hidden, const int32_t* mask, int64_t B, int64_t T,
                         int64_t C, PoolingMode mode);
void l2_normalize_forward_cpu(float* x, int64_t B, int64_t E);
void pooling_forward_cuda(int device, float* out, int64_t out_stride, const float* hidden, const int32_t* mask,
                          int64_t B, int64_t T, int64_t C, PoolingMode mode);
// hidden in hidden_dtype (f32, bf16, f16); out f32.
void pooling_forward_cuda(int device, float* out, int64_t out_stride, const void* hidden, DType hidden_dtype,
                          const int32_t* mask, int64_t B, int64_t T, int64_t C, PoolingMode mode);
void l2_normalize_forward_cuda(int device, float* x, int64_t B, int64_t E);

}  // namespace tach::ops
