// LoRA's training forward and backward on CUDA: the CPU kernels (ops/lora_cpu.cc) step for step,
// each GEMM through cuda::train_gemm and the dropout through the dropout op's kernel, whose mask is
// the CPU's. Compiled only with the CUDA backend.
#include "cuda/train_gemm.h"
#include "ops/dropout.h"
#include "ops/lora.h"

namespace tach::ops {

void lora_forward_cuda(int device, float* y, int64_t ldy, float* xa, const float* x, const float* A, const float* B,
                       const LoraShape& s, float* scratch) {
  const float* xd = x;
  if (s.dropout > 0.f) {
    dropout_cuda(device, scratch, x, s.M * s.K, s.dropout, s.dropout_key);
    xd = scratch;
  }
  // xa [M, r] = xd [M, K] · Aᵀ [K, r]
  cuda::train_gemm(device, false, true, s.M, s.r, s.K, 1.f, xd, s.K, A, s.K, 0.f, xa, s.r);
  // y [M, N] += scale · xa [M, r] · Bᵀ [r, N]
  cuda::train_gemm(device, false, true, s.M, s.N, s.r, s.scale, xa, s.r, B, s.r, 1.f, y, ldy);
}

void lora_backward_cuda(int device, float* dx, float* dA, float* dB, const float* dy, int64_t ldy, const float* x,
                        const float* xa, const float* A, const float* B, const LoraShape& s, float* scratch) {
  if (s.M == 0) return;              // no rows: every gradient gains nothing
  float* dxd = scratch;              // [M, K]
  float* dxa = scratch + s.M * s.K;  // [M, r]
  // dB [N, r] += scale · dyᵀ [N, M] · xa [M, r]
  cuda::train_gemm(device, true, false, s.N, s.r, s.M, s.scale, dy, ldy, xa, s.r, 1.f, dB, s.r);
  // dxa [M, r] = scale · dy [M, N] · B [N, r]
  cuda::train_gemm(device, false, false, s.M, s.r, s.N, s.scale, dy, ldy, B, s.r, 0.f, dxa, s.r);
  if (s.dropout > 0.f) {
    // dA [r, K] += dxaᵀ [r, M] · dropout(x) [M, K]; the dropped x is drawn again from its key.
    dropout_cuda(device, dxd, x, s.M * s.K, s.dropout, s.dropout_key);
    cuda::train_gemm(device, true, false, s.r, s.K, s.M, 1.f, dxa, s.r, dxd, s.K, 1.f, dA, s.K);
    if (!dx) return;  // nothing upstream trains
    // d(dropped x) [M, K] = dxa · A, then through the mask into dx.
    cuda::train_gemm(device, false, false, s.M, s.K, s.r, 1.f, dxa, s.r, A, s.K, 0.f, dxd, s.K);
    dropout_cuda(device, dxd, dxd, s.M * s.K, s.dropout, s.dropout_key);
    accumulate_cuda(device, dx, dxd, s.M * s.K);
    return;
  }
  cuda::train_gemm(device, true, false, s.r, s.K, s.M, 1.f, dxa, s.r, x, s.K, 1.f, dA, s.K);
  // dx [M, K] += dxa [M, r] · A [r, K] (null dx: nothing upstream trains)
  if (dx) cuda::train_gemm(device, false, false, s.M, s.K, s.r, 1.f, dxa, s.r, A, s.K, 1.f, dx, s.K);
}

}  // namespace tach::ops
