// 4-bit NormalFloat (NF4) weights as QLoRA stores its frozen base model, quantized as
// bitsandbytes' quantize_4bit(blocksize=64, quant_type="nf4", compress_statistics=True) does:
//   - blocks of 64 consecutive elements (row-major), each scaled by its absmax into [-1, 1] and
//     rounded to the nearest of the 16 NF4 values (a midpoint goes to the lower one), two codes
//     per byte, the first in the high nibble;
//   - double quantization: the absmax values minus their mean (the offset) are 8-bit quantized
//     with the dynamic code book in blocks of 256, each block scaled by its own absmax.
// Storage is 0.5 byte per weight plus 1/64 byte (the 8-bit absmax) and 4/(64·256) byte. The GEMM
// dequantizes tiles of rows into a small buffer and never holds the whole weight in f32
// (cpu/nf4_gemm.h). tests/test_nf4.cc checks codes, absmax values and the dequantized weight
// against bitsandbytes bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "tach/tensor.h"

namespace tach::cpu {

inline constexpr int64_t kNf4Block = 64;    // weights per absmax
inline constexpr int64_t kNf4Block2 = 256;  // absmax values per second-level scale

// The 16 NF4 values (the quantiles of N(0, 1) scaled to [-1, 1], with an exact zero).
const float* nf4_code_book();
// The signed 8-bit dynamic code book bitsandbytes quantizes the absmax values with (256 values,
// ascending): dynamic-exponent numbers in [-1, 1].
const float* dynamic_code_book();

// One quantized tensor [rows, cols] (rows · cols a multiple of 64).
struct Nf4Tensor {
  int64_t rows = 0, cols = 0;
  Tensor codes;    // u8 [rows · cols / 2], category weights
  Tensor qabsmax;  // u8 [blocks]
  Tensor absmax2;  // f32 [ceil(blocks / 256)]
  float offset = 0;
  int64_t bytes() const;
  // The f32 absmax of every 64-block, as dequantize_4bit rebuilds it: code[q] · absmax2 + offset.
  void absmax(float* out) const;
};

Nf4Tensor quantize_nf4(const float* w, int64_t rows, int64_t cols);
// out [row1 - row0, cols] = the dequantized rows (code · absmax, f32).
void dequantize_nf4_rows(const Nf4Tensor& t, int64_t row0, int64_t row1, float* out);

// A linear weight as the engine uses it: its Hugging Face tensors stacked by rows (the engine's
// fused q|k|v or gate|up), each quantized on its own as bitsandbytes quantizes each nn.Linear.
struct Nf4Matrix {
  std::vector<Nf4Tensor> parts;
  int64_t rows = 0, cols = 0;
  int64_t bytes() const;
  void dequantize_rows(int64_t row0, int64_t row1, float* out) const;  // across parts
};

// w [Σ part_rows, cols] f32; part_rows: the rows of each Hugging Face tensor in order.
Nf4Matrix quantize_nf4_matrix(const float* w, const std::vector<int64_t>& part_rows, int64_t cols);

}  // namespace tach::cpu
