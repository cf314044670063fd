// Weight-only quantized linears for a GPU (`--dtype int8` / `--dtype nf4` with `--device cuda`):
// the weight quantized once on the host, with the CPU's quantizers, into the layout the GPU's
// kernels read (cuda/quant_gemv.h). The activations stay in bf16; only the weight is compressed,
// since decoding reads every weight byte once per token and is bound by those bytes.
#pragma once

#include <cstdint>

#include "tach/tensor.h"

namespace tach::ops {

// codes and scales on the host (category workspace), ready to be copied to a device.
struct QuantizedWeight {
  Tensor codes;   // int8: i8 [N, K]; nf4: u8 [N · K / 2], element 2i in the high nibble of byte i
  Tensor scales;  // int8: f32 [N], each output row's scale; nf4: f32 [N · K / 64], each block's absmax
};

// Symmetric per output row, full range: q = round(w / s) in [-127, 127], s = max|w[n, :]| / 127
// (cpu/int8_quant.h's quantizer; a GPU multiplies in f32, so no 7-bit range is needed against
// saturation). w: [N, K], any float dtype, on the host.
QuantizedWeight quantize_int8_weight(const Tensor& w);
// bitsandbytes' NF4 as the CPU's nf4 linear stores it (cpu/nf4.h: 64-weight blocks over the
// row-major weight, the absmax double-quantized), with every block's absmax rebuilt once in f32,
// as dequantize_4bit rebuilds it. w: [N, K] with N · K a multiple of 64.
QuantizedWeight quantize_nf4_weight(const Tensor& w);

// The weight the kernels multiply by, f32 [N, K]: int8 code · scale, NF4 code book[code] ·
// absmax (each one f32 product, as the GPU dequantizes). `compute` is i8 or nf4.
Tensor dequantize_weight(const QuantizedWeight& q, DType compute, int64_t N, int64_t K);

}  // namespace tach::ops
