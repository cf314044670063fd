// An inference linear on NF4 weights (`--dtype nf4`): 4 bits per weight, quantized as QLoRA's
// bitsandbytes does (cpu/nf4.h), for decoding, where every weight byte is read once per token.
// A few rows (decoding's one token per sequence) go through a GEMV that reads the 4-bit codes
// directly: a 16-entry table lookup per code in registers (vpermps), an FMA with the input, and
// one multiply by the block's absmax per 64 weights, so no dequantized copy exists. More rows
// (a prompt's prefill) dequantize tiles of rows into f32 and multiply them (cpu/nf4_gemm.h).
#pragma once

#include <cstdint>

#include "cpu/nf4.h"
#include "cpu/packed_linear.h"
#include "tach/tensor.h"

namespace tach::cpu {

class Nf4Linear {
 public:
  // weight: [N, K] (any float dtype)  bias: [N] or undefined
  Nf4Linear(const Tensor& weight, const Tensor& bias, FusedActivation activation);

  // x: [M, K] f32 (row stride ldx)  y: [M, N] f32 (row stride ldy)
  void forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const;

  // Codes, the block absmax values as the GEMV reads them (f32), and the double-quantized state.
  size_t packed_bytes() const;
  // The most rows the GEMV takes; more go through dequantized tiles.
  static constexpr int64_t kGemvRows = 4;

 private:
  Nf4Matrix w_;
  Tensor absmax_;  // f32 [N · K / 64]: every block's absmax, rebuilt once from the double quantization
  Tensor bias_;
  FusedActivation activation_ = FusedActivation::none;
  int64_t N_ = 0, K_ = 0;
};

// The GEMV on its own, for tests: y [M, N] = x [M, K] · Wᵀ with W's codes [N · K / 2] (element 2i
// in the high nibble of byte i) and absmax [N · K / 64]; K a multiple of 64, M <= kGemvRows.
void nf4_gemv(const uint8_t* codes, const float* absmax, const float* x, int64_t M, int64_t ldx, int64_t N, int64_t K,
              float* y, int64_t ldy);

}  // namespace tach::cpu
