// Multi-head scaled dot-product attention for encoders (bidirectional, key padding mask).
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// q, k, v: [B, T, H*D] f32, rows may be strided (views into one fused QKV buffer [B, T, 3*H*D])
// key_mask: [B, T] i32 (1 = keep, 0 = padding) or undefined  out: [B, T, H*D] f32 contiguous
// scores = q·kᵀ * scale, plus finfo(f32).min where the key is padding (Hugging Face's
// additive mask, so a fully padded row behaves as it does there), softmax over keys, · v.
// Inference keeps no probabilities; training calls attention_forward_train_cpu, which saves them.
void attention_forward(Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, int heads,
                       float scale);
OpCost attention_cost(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Tq = -1);

// Kernel. q/k/v row stride ld_in, out row stride ld_out (in floats). mask: [B, T] or null.
void attention_forward_cpu(float* out, const float* q, const float* k, const float* v, const int32_t* mask, int64_t B,
                           int64_t T, int64_t H, int64_t D, int64_t ld_in, int64_t ld_out, float scale);

// Training forward: as attention_forward_cpu, and saves the softmax probabilities (before
// dropout) in probs: [B, H, T, T], zero at keys past a right-padded prefix. Dropout on the
// probabilities (attention_probs_dropout_prob) uses ops/dropout's mask with element index
// ((b*H + h)*T + i)*T + j; dropout_p = 0 turns it off. probs null (the fused path): nothing is
// saved, and the backward recomputes the probabilities from q and k (one GEMM per head more,
// B*H*T*T floats less per layer).
void attention_forward_train_cpu(float* out, float* probs, const float* q, const float* k, const float* v,
                                 const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                                 int64_t ld_out, float scale, float dropout_p, uint64_t dropout_key, int64_t Tq = -1);
// Backward. dout: [B, T, H*D] (row stride ld_out)  probs: saved by the forward, or null to recompute.
// dq, dk, dv: [B, T, H*D] with row stride ld_in (column blocks of one [B, T, 3C] gradient),
// written, not accumulated.
void attention_backward_cpu(float* dq, float* dk, float* dv, const float* dout, const float* probs, const float* q,
                            const float* k, const float* v, const int32_t* mask, int64_t B, int64_t T, int64_t H,
                            int64_t D, int64_t ld_in, int64_t ld_out, float scale, float dropout_p,
                            uint64_t dropout_key, int64_t Tq = -1);
// Tq >= 0: only the first Tq query rows of each sequence (a classifier's last layer reads the
// first token only): out and dq get those rows, dk and dv all keys. -1: all T.
OpCost attention_backward_cost(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Tq = -1);

// CUDA kernel: as attention_forward_cpu, one fused pass with an online softmax (no [T, T]
// scores in memory); head sizes 4, 8, 16, 32, 64, 80, 96, 128.
void attention_forward_cuda(int device, float* out, const float* q, const float* k, const float* v,
                            const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                            int64_t ld_out, float scale);

}  // namespace tach::ops
