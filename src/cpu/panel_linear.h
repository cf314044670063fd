// An f32 inference linear whose weights are packed once, at load, into panels of 16 output
// columns and multiplied by tach's own AVX2/FMA kernels. It stands in for oneDNN's matmul where
// oneDNN has no kernel on packed weights: on a CPU without AVX-512, oneDNN 2.6's f32 matmul is
// its `gemm:jit` path, which packs its operands again at every call. For a decoding step's single
// row that reads the weights well below the memory's speed; over 16-column panels, 4 panels at a
// time, the GEMV reads them about 1.5x faster (docs/perf.md, "Decoding on AVX2: panel kernels").
//
// Layout: panel p holds W[16p + j, k] at [p, k, j], so a panel is read front to back, k by k, as
// the kernels want it; N is padded with zero columns to a whole panel.
#pragma once

#include <cstdint>

#include "cpu/packed_linear.h"
#include "tach/tensor.h"

namespace tach::cpu {

class PanelLinear {
 public:
  static constexpr int64_t kPanel = 16;  // output columns per panel: two 8-float registers

  // Built with AVX2 and FMA (the kernels' instructions).
  static bool available();
  // Whether an f32 PackedLinear takes this path. By default only for a model loaded to decode token
  // by token (few rows per call, where these kernels read the weights fastest) on a CPU where
  // oneDNN's f32 matmul (after DNNL_MAX_CPU_ISA) is the repacking `gemm:jit` one: at a batch's
  // thousand rows oneDNN's kernel is faster. TACH_F32_GEMM=panels or =onednn forces either way
  // (for comparisons and tests).
  static bool chosen_for(bool decoding);

  // weight: [N, K] (any float dtype)  bias: [N] or undefined
  PanelLinear(const Tensor& weight, const Tensor& bias, FusedActivation activation);

  // x: [M, K] f32 (row stride ldx)  y: [M, N] f32 (row stride ldy)
  void forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const;

  // The panels, padding included (the bias apart, as PackedLinear's).
  size_t packed_bytes() const { return panels_.nbytes(); }

 private:
  Tensor panels_;  // f32 [ceil(N / 16), K, 16]
  Tensor bias_;    // f32 [ceil(N / 16) * 16], zero past N; undefined without a bias
  FusedActivation activation_ = FusedActivation::none;
  int64_t N_ = 0, K_ = 0;
};

}  // namespace tach::cpu
