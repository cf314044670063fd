// y = x·Wᵀ (+ bias) for a few rows of x: decoding's linears, which read every weight once per
// step and so are bound by memory bandwidth, not arithmetic. cuBLASLt tiles for many rows; this
// reads x (f32, or in the weights' 16-bit dtype) and W in its stored dtype directly, 16 bytes per
// lane per load, each warp one output column at a time for all rows, so every weight byte is read
// once. (Quantized weights have their own GEMVs: cuda/quant_gemv.h.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tach/dtype.h"

namespace tach::cuda {

enum class GemvWeights { f32, bf16, f16 };
// A gated MLP's gate, formed as x is loaded (decoding's down projection): x_k = act(gate_k) · up_k
// from the gate|up GEMM's output, so that no separate gate kernel writes act and down reads it back.
enum class GemvGate { none, silu, gelu_tanh, gelu };

constexpr int64_t kGemvMaxRows = 4;

struct GemvArgs {
  int64_t M = 0, N = 0, K = 0;
  int64_t ld_x = 0, ld_y = 0;  // row strides in elements
  GemvWeights weights = GemvWeights::f32;
  // x and y: f32, or the 16-bit weights' own dtype (bf16 x with bf16 weights, f16 with f16).
  DType activation = DType::f32;
  bool relu = false;
  // Not none: x is gate|up [M, 2K] (row stride ld_x >= 2K), gate in columns [0, K) and up in
  // [K, 2K), and the GEMV's x_k = act(gate_k) · up_k in f32, rounded to the activation dtype, as
  // the gate op (ops/silu_gate.h) writes act: the same numbers as the gate op, then this GEMV.
  GemvGate gate = GemvGate::none;
};

// Whether gemv takes these: M <= kGemvMaxRows, K a multiple of 8, x's rows and W 16-byte aligned,
// an activation dtype the weights take (f32, or theirs); with a gate, ld_x >= 2K.
bool gemv_fits(const GemvArgs& a, const void* x, const void* W);
// x: [M, K] in a.activation (row stride ld_x)  W: [N, K] contiguous, in a.weights  bias: [N] f32
// or null  y: [M, N] in a.activation (row stride ld_y). f32 x with bf16/f16 weights is rounded to
// that dtype first, as the GEMM path's conversion does; the products are summed in f32 and y
// rounded once (to nearest even) when it is bf16/f16. Runs on tach's stream of `device`.
void gemv(int device, void* y, const void* x, const void* W, const float* bias, const GemvArgs& a);

}  // namespace tach::cuda
