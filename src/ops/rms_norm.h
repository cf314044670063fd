// RMSNorm over the last dimension (Qwen2, Llama), with the residual add of a pre-norm block
// fused in: h += delta, then out = weight * h / sqrt(mean(h^2) + eps).
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// h: [N, C] A, updated in place when delta is given  delta: [N, C] A or undefined
// weight: [C] f32 (as applied: Gemma's (1 + w) is folded in at load)  out: [N, C] A (must not
// alias h). A, the activation dtype: f32, or on CUDA also bf16 or f16 (the CPU refuses another A
// by name); the sum of squares in f32 whatever A is. In bf16/f16 h + delta is rounded to A (what
// h then holds, as transformers' bf16 residual stream) before the norm reads it, and out is
// rounded once to A.
// rstd: [N] f32, or undefined: inference keeps no statistics; training (A = f32) saves them for
// rms_norm_backward.
void rms_norm_forward(Tensor& out, Tensor& h, const Tensor& delta, const Tensor& weight, float eps,
                      const Tensor& rstd = Tensor());
OpCost rms_norm_cost(int64_t N, int64_t C, bool with_residual, DType dtype = DType::f32);

// Backward of the training forward (the kernel's formula below). dout, inp: [N, C] f32 (inp: the
// h the forward normalised, after the residual add)  weight: [C] as applied  rstd: [N] saved by
// the forward  dinp: [N, C] +=  dweight: [C] +=, or undefined for a frozen norm (its cost is not
// counted). All contiguous, on one device.
void rms_norm_backward(const Tensor& dinp, const Tensor& dweight, const Tensor& dout, const Tensor& inp,
                       const Tensor& weight, const Tensor& rstd);

// Kernel. Sum of squares in f32, as transformers' Qwen2RMSNorm computes it in f32. Saves
// rstd: [N] for the backward when it is not null.
void rms_norm_forward_cpu(float* out, float* h, const float* delta, const float* weight, int64_t N, int64_t C,
                          float eps, float* rstd = nullptr);

// Backward of out = weight * inp * rstd, rstd = 1 / sqrt(mean(inp^2) + eps):
//   dinp += rstd * (dout*weight - inp * rstd^2 * mean(dout*weight*inp)),  dweight += Σ_n dout*inp*rstd.
// dout, inp: [N, C] (inp: the h the forward normalised, after the residual add)  weight: [C]
// rstd: [N] saved by the forward  dinp: [N, C] +=  dweight: [C] += (null: frozen)  (the residual stream's
// gradient is already in dinp, so the add is the accumulation)
void rms_norm_backward_cpu(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                           const float* rstd, int64_t N, int64_t C);
OpCost rms_norm_backward_cost(int64_t N, int64_t C);

// RMSNorm over each head of q and k (Qwen3, Gemma 3: q_norm and k_norm before RoPE): in
// `x: [N, ld]` (the fused q|k|v buffer, in the activation dtype A: f32, or bf16/f16 on CUDA), the
// `heads` blocks of D columns from column col0 are each normalised in place with the shared
// weight: [D] f32 (f32 arithmetic, each output rounded once to A). Training (A = f32) saves, for
// rms_norm_heads_backward, saved_in: [N, heads*D] (the input) and rstd: [N, heads], both
// contiguous f32; inference leaves them undefined.
void rms_norm_heads_forward(Tensor& x, int64_t col0, int64_t heads, int64_t D, const Tensor& weight, float eps,
                            const Tensor& saved_in = Tensor(), const Tensor& rstd = Tensor());
OpCost rms_norm_heads_cost(int64_t N, int64_t heads, int64_t D, DType dtype = DType::f32);

// Backward of the q and k norms (two rms_norm_heads_forward calls: q's heads from column 0, k's
// right after them), in place, as one op like rope_backward. d_qkv: [N, ld] f32 contiguous:
// columns [0, (q_heads + k_heads) D) hold d(out) on entry and d(in) on exit, the rest untouched.
// saved_in: [N, (q_heads + k_heads) D] q's saved block ([N, q_heads D]), then k's; rstd:
// [N, q_heads + k_heads] likewise. weights: [D] as applied; their gradients [D] +=, or undefined
// for frozen norms.
void rms_norm_heads_backward(const Tensor& d_qkv, int64_t q_heads, int64_t k_heads, int64_t D, const Tensor& saved_in,
                             const Tensor& rstd, const Tensor& q_weight, const Tensor& k_weight,
                             const Tensor& dq_weight, const Tensor& dk_weight);
// Kernel: saved_in: [N, heads*D] (null at inference) keeps the input for the backward; rstd: [N*heads].
void rms_norm_heads_forward_cpu(float* x, int64_t ld, int64_t N, int64_t heads, int64_t D, const float* weight,
                                float eps, float* saved_in = nullptr, float* rstd = nullptr);
// Backward, in place: dx (stride ld) holds d(out) on entry and d(in) on exit; inp: [N, heads*D]
// the saved input; dweight: [D] += (null: frozen).
void rms_norm_heads_backward_cpu(float* dx, int64_t ld, const float* inp, const float* weight, const float* rstd,
                                 float* dweight, int64_t N, int64_t heads, int64_t D);

// CUDA kernels (ops/rms_norm_cuda.cu), on tach's stream of `device`, each as its CPU kernel
// (the saved tensors null at inference). The backwards sum dweight over rows in fixed chunks, no
// atomics: two runs agree bitwise.
void rms_norm_heads_forward_cuda(int device, float* x, int64_t ld, int64_t N, int64_t heads, int64_t D,
                                 const float* weight, float eps, float* saved_in = nullptr, float* rstd = nullptr);
void rms_norm_forward_cuda(int device, float* out, float* h, const float* delta, const float* weight, int64_t N,
                           int64_t C, float eps, float* rstd = nullptr);
// The inference forms in a bf16, f16 (or f32) activation dtype: h, delta, out, x point to
// elements of `dtype`; weight stays f32; nothing saved.
void rms_norm_forward_cuda(int device, DType dtype, void* out, void* h, const void* delta, const float* weight,
                           int64_t N, int64_t C, float eps);
void rms_norm_heads_forward_cuda(int device, DType dtype, void* x, int64_t ld, int64_t N, int64_t heads, int64_t D,
                                 const float* weight, float eps);
void rms_norm_backward_cuda(int device, float* dinp, float* dweight, const float* dout, const float* inp,
                            const float* weight, const float* rstd, int64_t N, int64_t C);
void rms_norm_heads_backward_cuda(int device, float* dx, int64_t ld, const float* inp, const float* weight,
                                  const float* rstd, float* dweight, int64_t N, int64_t heads, int64_t D);

}  // namespace tach::ops
