// Multi-head scaled dot-product attention for encoders (bidirectional, key padding mask).
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// q, k, v: [B, T, H*D] f32, rows may be strided (views into one fused QKV buffer [B, T, 3*H*D])
// key_mask: [B, T] i32 (1 = keep, 0 = padding) or undefined  out: [B, T, H*D] f32 contiguous
// scores = q·kᵀ * scale, plus finfo(f32).min where the key is padding (Hugging Face's
// additive mask, so a fully padded row behaves as it does there), softmax over keys, · v.
// The backward would need the softmax probabilities [B, H, T, T]; inference keeps none.
void attention_forward(Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, int heads,
                       float scale);
OpCost attention_cost(int64_t B, int64_t T, int64_t H, int64_t D);

// Kernel. q/k/v row stride ld_in, out row stride ld_out (in floats). mask: [B, T] or null.
void attention_forward_cpu(float* out, const float* q, const float* k, const float* v, const int32_t* mask, int64_t B,
                           int64_t T, int64_t H, int64_t D, int64_t ld_in, int64_t ld_out, float scale);

}  // namespace tach::ops
