// An inference linear with bf16 weights and f32 compute, for CPUs without a bf16 GEMM (AVX2):
// `--dtype bf16` there stores every linear's weight in bf16 (half of f32's bytes) and widens it
// inside the kernels. A few rows (decoding) go through a GEMV that loads 16-bit weights, shifts
// them into f32 and multiplies them with the f32 inputs, so a step reads half the bytes; more rows
// (a prompt's prefill) widen tiles of rows into f32 and multiply them with the f32 GEMM. The
// result is x · bf16(W)ᵀ in f32: the inputs are not rounded, unlike oneDNN's bf16 matmul where
// there is one.
#pragma once

#include <cstdint>

#include "cpu/packed_linear.h"
#include "tach/tensor.h"

namespace tach::cpu {

class Bf16WeightLinear {
 public:
  // weight: [N, K] (any float dtype; rounded to bf16, nearest even)  bias: [N] or undefined
  Bf16WeightLinear(const Tensor& weight, const Tensor& bias, FusedActivation activation);

  // x: [M, K] f32 (row stride ldx)  y: [M, N] f32 (row stride ldy)
  void forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const;

  size_t packed_bytes() const { return w_.nbytes(); }
  static constexpr int64_t kGemvRows = 4;  // more rows go through widened tiles

 private:
  Tensor w_;  // bf16 [N, K]
  Tensor bias_;
  FusedActivation activation_ = FusedActivation::none;
  int64_t N_ = 0, K_ = 0;
};

// The GEMV alone: y [M, N] = x [M, K] · widen(W)ᵀ, W bf16 [N, K] (raw bits); M <= kGemvRows.
void bf16_weight_gemv(const uint16_t* w, const float* x, int64_t M, int64_t ldx, int64_t N, int64_t K, float* y,
                      int64_t ldy);

}  // namespace tach::cpu
