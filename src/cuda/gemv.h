// y = x·Wᵀ (+ bias) for a few rows of x: decoding's linears, which read every weight once per
// step and so are bound by memory bandwidth, not arithmetic. cuBLASLt needs x in the weights'
// dtype (one more kernel per linear, a few microseconds each at decoding's sizes) and tiles for
// many rows; this reads f32 x and W in its stored dtype directly, 16 bytes per lane per load,
// each warp one output column at a time for all rows, so every weight byte is read once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tach::cuda {

enum class GemvWeights { f32, bf16, f16 };

constexpr int64_t kGemvMaxRows = 4;

struct GemvArgs {
  int64_t M = 0, N = 0, K = 0;
  int64_t ld_x = 0, ld_y = 0;  // row strides in elements
  GemvWeights weights = GemvWeights::f32;
  bool relu = false;
};

// Whether gemv takes these: M <= kGemvMaxRows, K a multiple of 8, x's rows and W 16-byte aligned.
bool gemv_fits(const GemvArgs& a, const void* x, const void* W);
// x: [M, K] f32 (row stride ld_x)  W: [N, K] contiguous, in a.weights  bias: [N] f32 or null
// y: [M, N] f32 (row stride ld_y). With bf16/f16 weights x is rounded to that dtype first, as the
// GEMM path's conversion does, and the products are summed in f32. Runs on tach's stream of `device`.
void gemv(int device, float* y, const float* x, const void* W, const float* bias, const GemvArgs& a);

}  // namespace tach::cuda
