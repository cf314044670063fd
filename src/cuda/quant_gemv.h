// Weight-only int8 and NF4 linears on the GPU (`--dtype int8` / `--dtype nf4` on CUDA; the
// weights packed on the host by ops/linear_quantized.h).
//   - A few rows (decoding): GEMVs that read the packed codes, 16 bytes per lane per load (16
//     int8 weights, or 32 NF4 codes: half a 64-block), dequantize them in registers (int8: code ·
//     the row's scale; NF4: the 16-value code book in shared memory, times the block's absmax)
//     and multiply with x in f32. Decoding reads every weight byte once per token, so 8 or 4.5
//     bits per weight instead of bf16's 16 are what makes it faster.
//   - More rows: the weight dequantized into bf16 for the bf16 GEMM (ops/linear_cuda.cc).
#pragma once

#include <cstdint>

#include "cuda/gemv.h"
#include "tach/dtype.h"

namespace tach::cuda {

enum class QuantWeights { int8, nf4 };

struct QuantGemvArgs {
  int64_t M = 0, N = 0, K = 0;
  int64_t ld_x = 0, ld_y = 0;  // row strides in elements
  QuantWeights weights = QuantWeights::int8;
  DType activation = DType::bf16;  // x and y: bf16, or f32 (x rounded to bf16 first, as the GEMM path does)
  bool relu = false;
  // Not none: x is gate|up [M, 2K] and x_k = act(gate_k) · up_k, as cuda/gemv.h's GemvArgs::gate.
  GemvGate gate = GemvGate::none;
};

// Whether quant_gemv takes these: 1 to kGemvMaxRows rows, K a multiple of 16 (int8) or of 64
// (NF4: each row whole blocks), x's rows and the codes 16-byte aligned; with a gate, ld_x >= 2K.
bool quant_gemv_fits(const QuantGemvArgs& a, const void* x, const void* codes);

// x: [M, K] (row stride ld_x)  codes: int8 i8 [N, K], or NF4 u8 [N · K / 2] (element 2i in the
// high nibble of byte i)  scales: int8 f32 [N] (per row), NF4 f32 [N · K / 64] (per block)
// bias: [N] f32 or null  y: [M, N] (row stride ld_y) = relu?(x · dequant(W)ᵀ + bias), summed in
// f32 and rounded once to y's dtype. On tach's stream of `device`.
void quant_gemv(int device, void* y, const void* x, const void* codes, const float* scales, const float* bias,
                const QuantGemvArgs& a);

// out: bf16 [N, K] contiguous = the weight as the GEMV multiplies by it, each element one f32
// product (code · scale, or code book[code] · absmax) rounded to bf16. On tach's stream.
void dequantize_weight_bf16(int device, void* out, const void* codes, const float* scales, QuantWeights w, int64_t N,
                            int64_t K);

}  // namespace tach::cuda
