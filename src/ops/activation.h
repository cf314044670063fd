// ReLU and tanh as ops of their own for training (inference fuses them into the linear's
// GEMM). Both backwards read the saved output, which is all their derivatives need.
// GELU has its own files (gelu.h): its backward needs the input.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// Training entry points "relu", "tanh" and their "_backward": f32 tensors of one size,
// contiguous, on one device. The forward's y may be x; the backward reads the saved output y.
// The forwards also take bf16 or f16 x and y on CUDA (one dtype for both: inference's
// activations, BERT's pooler tanh), computed in f32 and rounded once; the CPU refuses them.
// y = act(x)        dx += dy · act'(y)
void relu_forward(const Tensor& y, const Tensor& x);
void relu_backward(const Tensor& dx, const Tensor& y, const Tensor& dy);
void tanh_forward(const Tensor& y, const Tensor& x);
void tanh_backward(const Tensor& dx, const Tensor& y, const Tensor& dy);

// Kernels.
// x, y: [n] (y may alias x)
void relu_forward_cpu(float* y, const float* x, int64_t n);
// dx += dy * (y > 0)
void relu_backward_cpu(float* dx, const float* y, const float* dy, int64_t n);
void tanh_forward_cpu(float* y, const float* x, int64_t n);
// dx += dy * (1 - y²)
void tanh_backward_cpu(float* dx, const float* y, const float* dy, int64_t n);

OpCost activation_cost(int64_t n, DType dtype = DType::f32);
OpCost activation_backward_cost(int64_t n);

// CUDA kernels, the CPU kernels' arguments and accumulate rules.
void relu_forward_cuda(int device, float* y, const float* x, int64_t n);
// The forwards with x and y in `dtype` (f32, bf16, f16).
void relu_forward_cuda(int device, DType dtype, void* y, const void* x, int64_t n);
void tanh_forward_cuda(int device, DType dtype, void* y, const void* x, int64_t n);
void relu_backward_cuda(int device, float* dx, const float* y, const float* dy, int64_t n);
void tanh_forward_cuda(int device, float* y, const float* x, int64_t n);
void tanh_backward_cuda(int device, float* dx, const float* y, const float* dy, int64_t n);

}  // namespace tach::ops
