// GELU, the exact (erf) form as torch.nn.functional.gelu's default: x/2 (1 + erf(x / sqrt 2)).
// Inference fuses it after the linear's GEMM (cpu/packed_linear); training applies it as its
// own op, so that the pre-activation its backward needs is kept.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// Training entry points: f32 tensors of one size, contiguous, on one device.
// "gelu": out = gelu(x); the caller keeps x (the pre-activation) for the backward. out may be x
// only when no backward follows. On CUDA x and out may also be bf16 or f16 (one dtype for both:
// inference's activations), computed in f32 and rounded once; the CPU refuses them by name.
void gelu_forward(const Tensor& out, const Tensor& x);
// "gelu_backward": dx += dout · gelu'(x), x the saved pre-activation.
void gelu_backward(const Tensor& dx, const Tensor& x, const Tensor& dout);
// "bias_gelu" (--exec fused): pre: [M, N] the GEMM's output without its bias, becomes x·Wᵀ + b
// (kept for the backward)  b: [N]  act: [M, N] = gelu(pre)
void bias_gelu_forward(const Tensor& pre, const Tensor& act, const Tensor& b);
// "bias_gelu_backward": dpre [M, N] = dact · gelu'(pre) (written), db [N] += Σ_m dpre (undefined: frozen)
void bias_gelu_backward(const Tensor& dpre, const Tensor& db, const Tensor& pre, const Tensor& dact);

// Kernels.
// x: [n]  out: [n] (may alias x; then the pre-activation is gone and no backward is possible)
void gelu_forward_cpu(float* out, const float* x, int64_t n);
// d gelu / dx = Phi(x) + x phi(x).   x (the saved pre-activation), dout: [n]   dx: [n] +=
void gelu_backward_cpu(float* dx, const float* x, const float* dout, int64_t n);

OpCost gelu_cost(int64_t n, DType dtype = DType::f32);
OpCost gelu_backward_cost(int64_t n);

// Fused with the linear's bias (training, --exec fused): the GEMM runs without its bias, then one
// pass adds it and applies GELU. pre: [M, N] GEMM output, becomes x·Wᵀ + b (kept for the
// backward)  b: [N]  act: [M, N] = gelu(pre)
void bias_gelu_forward_cpu(float* pre, float* act, const float* b, int64_t M, int64_t N);
// The backward of both: dpre [M, N] = dact * gelu'(pre) (written), db [N] += Σ_m dpre (in row order).
void bias_gelu_backward_cpu(float* dpre, float* db, const float* pre, const float* dact, int64_t M, int64_t N);

// CUDA kernels (erf form), the CPU kernels' arguments and accumulate rules.
// out: [n] = gelu(x: [n]), in place when out == x.
void gelu_forward_cuda(int device, float* out, const float* x, int64_t n);
// The same with out and x in `dtype` (f32, bf16, f16): load, gelu in f32, round once.
void gelu_forward_cuda(int device, DType dtype, void* out, const void* x, int64_t n);
// dx: [n] += dout · gelu'(x)
void gelu_backward_cuda(int device, float* dx, const float* x, const float* dout, int64_t n);
// pre: [M, N] += b per row, act = gelu(pre)
void bias_gelu_forward_cuda(int device, float* pre, float* act, const float* b, int64_t M, int64_t N);
// dpre [M, N] = dact · gelu'(pre) (written); db [N] += Σ_m dpre in a fixed order (null: frozen)
void bias_gelu_backward_cuda(int device, float* dpre, float* db, const float* pre, const float* dact, int64_t M,
                             int64_t N);

}  // namespace tach::ops
