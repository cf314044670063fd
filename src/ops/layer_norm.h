// LayerNorm over the last dimension, with an optional residual added first (post-LN
// transformers compute LayerNorm(x + residual)).
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// x: [N, C] A  residual: [N, C] A or undefined  gamma, beta: [C] f32 (the CPU: beta may be
// undefined, no bias)  out: [N, C] A
// A, the activation dtype: f32, or on CUDA also bf16 or f16 (x, residual and out all in A; the
// CPU refuses another A by name). Statistics in f32 whatever A is; in bf16/f16 x + residual is
// rounded to A before the norm, as transformers adds the residual in the model's dtype, and the
// output is rounded once to A. out may alias x. The inference path keeps no statistics; training
// calls the kernel with mean and rstd outputs and layer_norm_backward_cpu.
void layer_norm_forward(Tensor& out, const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                        float eps);
OpCost layer_norm_cost(int64_t N, int64_t C, bool with_residual, DType dtype = DType::f32);

// Kernel. Statistics in double-free two-pass f32 (mean first, then variance about the mean)
// to match PyTorch's numerics to ~1e-6. For the backward it saves mean and rstd per row
// (mean, rstd: [N]) when they are not null; inference passes null.
void layer_norm_forward_cpu(float* out, const float* x, const float* residual, const float* gamma, const float* beta,
                            int64_t N, int64_t C, float eps, float* mean = nullptr, float* rstd = nullptr);

// Pre-norm form (ModernBERT): h += delta (when given), then out = LayerNorm(h) * gamma (+ beta when
// defined: ModernBERT's have none). h: [N, C] updated in place  out: [N, C], not aliasing h.
// h, delta and out in one activation dtype A (f32; bf16 or f16 on CUDA, where h keeps the sum
// rounded to A and the norm reads that rounded sum, as transformers' residual stream).
// mean, rstd: [N] f32 saved for the backward (training, A = f32 only), or undefined.
void pre_layer_norm_forward(Tensor& out, Tensor& h, const Tensor& delta, const Tensor& gamma, const Tensor& beta,
                            float eps, const Tensor& mean = Tensor(), const Tensor& rstd = Tensor());
void add_layer_norm_forward_cpu(float* out, float* h, const float* delta, const float* gamma, const float* beta,
                                int64_t N, int64_t C, float eps, float* mean = nullptr, float* rstd = nullptr);

// Training entry points, forward beside backward. Every tensor f32, contiguous, on one device.
// "layer_norm": out = LayerNorm(x), saving the statistics of each row for the backward.
// x, out: [N, C]  gamma, beta: [C]  mean, rstd: [N] (written)
void layer_norm_forward_train(const Tensor& out, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                              const Tensor& mean, const Tensor& rstd);
// "dropout_add_layer_norm" (--exec fused): sum = x + dropout(branch), out = LayerNorm(sum) in one
// pass, saving sum (the backward's input), mean and rstd; the mask is the one ops::dropout_forward
// draws over [N, C] with this key. branch, x, sum, out: [N, C]  mean, rstd: [N]
void dropout_add_layer_norm_forward(const Tensor& sum, const Tensor& out, const Tensor& branch, const Tensor& x,
                                    const Tensor& gamma, const Tensor& beta, float eps, float dropout_p,
                                    uint64_t dropout_key, const Tensor& mean, const Tensor& rstd);
// "layer_norm_backward" of either: dout, inp (the saved sum or input): [N, C]  gamma: [C]  mean,
// rstd: [N] saved by the forward. dinp: [N, C] +=  dgamma, dbeta: [C] += (each undefined is
// skipped: a frozen LayerNorm, or one without a bias)
void layer_norm_backward(const Tensor& dinp, const Tensor& dgamma, const Tensor& dbeta, const Tensor& dout,
                         const Tensor& inp, const Tensor& gamma, const Tensor& mean, const Tensor& rstd);
OpCost layer_norm_backward_cost(int64_t N, int64_t C, bool param_grads);

// Kernels.
// Backward of out = (inp - mean) * rstd * gamma + beta, with inp = x + residual (the residual's
// gradient is dinp too: the caller adds it to both branches).
// dout, inp: [N, C]  gamma: [C]  mean, rstd: [N] (saved by the forward)
// dinp: [N, C] +=   dgamma, dbeta: [C] +=   (gradients accumulate; both null for a frozen LayerNorm,
// dbeta alone for one without a bias)
void layer_norm_backward_cpu(float* dinp, float* dgamma, float* dbeta, const float* dout, const float* inp,
                             const float* gamma, const float* mean, const float* rstd, int64_t N, int64_t C);

// Fused (training, --exec fused): sum = x + dropout(branch), out = LayerNorm(sum) in one pass per
// row, saving sum (the backward's input), mean and rstd. The dropout mask is the one
// dropout_forward_cpu draws over [N, C] with this key; dropout_p = 0 adds the branch as is.
void dropout_add_layer_norm_forward_cpu(float* sum, float* out, const float* branch, const float* x, const float* gamma,
                                        const float* beta, int64_t N, int64_t C, float eps, float dropout_p,
                                        uint64_t dropout_key, float* mean, float* rstd);

// CUDA kernels (ops/layer_norm_cuda.cu, built with the CUDA backend), on tach's stream of
// `device`, each as its CPU kernel: out may alias x or residual; mean and rstd ([N]) are saved
// when not null (training).
void layer_norm_forward_cuda(int device, float* out, const float* x, const float* residual, const float* gamma,
                             const float* beta, int64_t N, int64_t C, float eps, float* mean = nullptr,
                             float* rstd = nullptr);
// h += delta (when given), out = LayerNorm(h) with beta optional: the pre-norm form.
void pre_layer_norm_forward_cuda(int device, float* out, float* h, const float* delta, const float* gamma,
                                 const float* beta, int64_t N, int64_t C, float eps, float* mean = nullptr,
                                 float* rstd = nullptr);
// The inference forms in a bf16, f16 (or f32) activation dtype: x, residual/delta, h and out point
// to [N, C] elements of `dtype`; gamma, beta stay f32; statistics in f32, the residual sum
// rounded to dtype before the norm, the output rounded once.
void layer_norm_forward_cuda(int device, DType dtype, void* out, const void* x, const void* residual,
                             const float* gamma, const float* beta, int64_t N, int64_t C, float eps);
void pre_layer_norm_forward_cuda(int device, DType dtype, void* out, void* h, const void* delta, const float* gamma,
                                 const float* beta, int64_t N, int64_t C, float eps);
// The fused training forward: the CPU's dropout mask exactly (ops/dropout_mask.h).
void dropout_add_layer_norm_forward_cuda(int device, float* sum, float* out, const float* branch, const float* x,
                                         const float* gamma, const float* beta, int64_t N, int64_t C, float eps,
                                         float dropout_p, uint64_t dropout_key, float* mean, float* rstd);
// The backward: dinp +=; dgamma, dbeta += summed over rows in fixed chunks (no atomics: two runs
// agree bitwise), skipped as on the CPU (dgamma null: neither).
void layer_norm_backward_cuda(int device, float* dinp, float* dgamma, float* dbeta, const float* dout, const float* inp,
                              const float* gamma, const float* mean, const float* rstd, int64_t N, int64_t C);

}  // namespace tach::ops
