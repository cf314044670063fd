// LoRA beside a frozen linear (Hu et al., 2021; PEFT's lora.Linear): the linear's output rows
// [row0, row0 + N) gain scale · B · A · dropout(x), scale = lora_alpha / r. A: [r, K] (PEFT's
// lora_A), B: [N, r] (lora_B). The base weight gets no gradient; only dX flows through it, and
// the adapter adds its own share of dX here.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

struct LoraShape {
  int64_t M = 0;  // rows of x
  int64_t K = 0;  // input features
  int64_t N = 0;  // output features of this adapter (a row block of the base linear's output)
  int64_t r = 0;  // rank
  float scale = 1.0f;
  float dropout = 0.0f;  // on x, before A (PEFT's lora_dropout)
  uint64_t dropout_key = 0;
};

// The training forward, saving xa for the backward:
// y: [M, N] f32, unit column stride, rows any distance apart (the adapter's columns of the base
// linear's output [M, ldy]: out.narrow(1, row0, N))  x: [M, K] f32 contiguous  A: [r, K]  B: [N, r]
// xa: [M, r] f32 (written)  scratch: f32, at least M * K elements when dropout > 0 (the dropped x)
// xa = dropout(x) · Aᵀ;  y += scale · xa · Bᵀ. Span "lora".
void lora_forward_train(const Tensor& y, const Tensor& xa, const Tensor& x, const Tensor& A, const Tensor& B,
                        const LoraShape& s, const Tensor& scratch);
// dy: [M, N] as y  x, xa: as the forward saw and saved them  dx: [M, K] += (undefined: nothing
// upstream trains)  dA: [r, K] +=  dB: [N, r] +=  scratch: f32, at least M * K + M * r elements.
// Span "lora_backward".
void lora_backward(const Tensor& dx, const Tensor& dA, const Tensor& dB, const Tensor& dy, const Tensor& x,
                   const Tensor& xa, const Tensor& A, const Tensor& B, const LoraShape& s, const Tensor& scratch);

// Kernels (ops/lora_cpu.cc).
// x: [M, K]  y: [M, ldy] (the adapter's columns start at y)  xa: [M, r] (saved for the backward)
// scratch: [M, K] when dropout > 0 (the dropped x), else unused
// xa = dropout(x) · Aᵀ;  y += scale · xa · Bᵀ
void lora_forward_cpu(float* y, int64_t ldy, float* xa, const float* x, const float* A, const float* B,
                      const LoraShape& s, float* scratch);
// dy: [M, ldy] (the adapter's columns)  x, xa: as saved  dx: [M, K] +=  dA: [r, K] +=  dB: [N, r] +=
// scratch: [M, K] + [M, r] floats
//   dB += scale · dyᵀ · xa;  dxa = scale · dy · B;  dA += dxaᵀ · dropout(x);  dx += dropout'(dxa · A)
void lora_backward_cpu(float* dx, float* dA, float* dB, const float* dy, int64_t ldy, const float* x, const float* xa,
                       const float* A, const float* B, const LoraShape& s, float* scratch);
// The same two on CUDA (ops/lora_cuda.cc), every pointer on `device`, on tach's stream: the CPU
// kernels' GEMMs through cuBLASLt at the run's training precision (cuda/train_gemm.h), the dropout
// mask drawn by the dropout op's CUDA kernel (the CPU's mask, element for element).
void lora_forward_cuda(int device, float* y, int64_t ldy, float* xa, const float* x, const float* A, const float* B,
                       const LoraShape& s, float* scratch);
void lora_backward_cuda(int device, float* dx, float* dA, float* dB, const float* dy, int64_t ldy, const float* x,
                        const float* xa, const float* A, const float* B, const LoraShape& s, float* scratch);
// dst [n] += src [n] (ops/lora_cuda.cu).
void accumulate_cuda(int device, float* dst, const float* src, int64_t n);
OpCost lora_cost(const LoraShape& s);
OpCost lora_backward_cost(const LoraShape& s, bool needs_dx = true);

}  // namespace tach::ops
