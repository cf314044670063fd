// Dynamic int8 quantization for inference linears (`--dtype int8`): the pieces around the int8
// GEMM. Weights are quantized once, symmetric per output channel; activations per token (row) at
// run time, symmetric; the GEMM accumulates in int32 and the epilogue turns each sum back into
// f32 with the two scales, then adds the bias.
//
// Saturation. x86's int8 dot products take unsigned × signed bytes. With VNNI (vpdpbusd) four
// products go straight into an int32, exact. Without it (AVX2, AVX-512 before VNNI) the kernels
// use vpmaddubsw, which adds two u8·s8 products into an int16 and saturates: a signed activation
// shifted to u8 (up to 255) times a weight of 127, twice, is 64,770 > 32,767. There the weights
// are quantized to 7 bits ([-63, 63], "reduced range", as ONNX Runtime's reduce_range and
// oneDNN's guidance for such CPUs): 2 · 255 · 63 = 32,130 fits, so no sum ever saturates.
#pragma once

#include <cstdint>
#include <string>

namespace tach::cpu {

// The largest weight code the int8 GEMM can take without saturating on this CPU (as oneDNN
// will run it, so DNNL_MAX_CPU_ISA is honoured): 127 with VNNI, 63 without.
int int8_weight_code_limit();
// In words, for the model line and docs: "s8s8, VNNI (exact)" or "s8s8, 7-bit weights (no VNNI)".
std::string int8_scheme();

// Each of the `rows` rows of x (row stride ldx, `cols` values) to codes in [-limit, limit]:
// q[r, c] = round(x[r, c] / scale[r]), scale[r] = max|x[r, :]| / limit (a zero row has scale 0
// and codes 0). q is dense ([rows, cols]). Rounds to nearest, ties to even, as torch does.
void quantize_rows_symmetric(const float* x, int64_t rows, int64_t cols, int64_t ldx, int limit, int8_t* q,
                             float* scale);

// In place over y (row stride ldy): y[m, n] = float(acc[m, n]) · row_scale[m] · col_scale[n] + bias[n],
// where acc is the int32 GEMM result the same memory holds. bias may be null.
void dequantize_int32_inplace(float* y, int64_t M, int64_t N, int64_t ldy, const float* row_scale,
                              const float* col_scale, const float* bias);

}  // namespace tach::cpu
