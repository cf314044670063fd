// The activations and their derivatives as the training kernels compute them on the GPU
// (ops/gelu_cuda.cu, ops/activation_cuda.cu, ops/silu_gate_cuda.cu): the same formulas as the
// CPU kernels (ops/*_cpu.cc), with CUDA's erff/expf/tanhf in place of cpu/vec_math's.
#pragma once

#include <cuda_runtime.h>

namespace tach::cuda {

constexpr float kInvSqrt2 = 0.70710678118654752f, kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kSqrt2OverPi = 0.7978845608028654f, kGeluCubic = 0.044715f;

// gelu(x) = x/2 (1 + erf(x / sqrt 2)), torch's default.
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * kInvSqrt2)); }
// Phi(x), the normal CDF, and gelu'(x) = Phi(x) + x phi(x).
__device__ __forceinline__ float normal_cdf(float x) { return 0.5f * (1.0f + erff(x * kInvSqrt2)); }
__device__ __forceinline__ float gelu_erf_grad(float x) {
  return normal_cdf(x) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
}

// gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), torch's approximate="tanh".
__device__ __forceinline__ float gelu_tanh_inner(float x) { return tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)); }
__device__ __forceinline__ float gelu_tanh(float x) { return 0.5f * x * (1.0f + gelu_tanh_inner(x)); }
// d/dx: (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
__device__ __forceinline__ float gelu_tanh_grad(float x) {
  const float t = gelu_tanh_inner(x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
}

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// silu(x) = x sigmoid(x); silu'(x) = s (1 + x (1 - s)), s = sigmoid(x).
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

}  // namespace tach::cuda
