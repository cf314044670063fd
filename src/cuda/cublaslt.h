// GEMMs on the GPU through cuBLASLt, in row-major terms, with the bias and activation fused as
// cuBLASLt epilogues.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tach::cuda {

// What the multiply runs in. The inputs x and W are stored in `input` (f32 for f32 and tf32);
// the products accumulate in f32 in every case.
enum class GemmPrecision { f32, tf32, bf16, f16 };
const char* gemm_precision_name(GemmPrecision p);

// Applied to x·Wᵀ in the GEMM's epilogue. ReLU is exact; cuBLASLt's GELU epilogue is the tanh
// approximation (bias_gelu_tanh: torch's GELU(approximate="tanh")), not transformers' erf GELU,
// so erf-GELU runs as its own kernel (ops/gelu_cuda.cu, ops/linear_activation_cuda.cu).
enum class Epilogue { none, bias, bias_relu, bias_gelu_tanh };

struct LinearArgs {
  int64_t M = 0, N = 0, K = 0;
  int64_t ld_x = 0;  // row stride of x in elements (>= K)
  int64_t ld_y = 0;  // row stride of y in elements (>= N)
  GemmPrecision precision = GemmPrecision::f32;
  bool y_in_input_type = false;  // y in bf16/f16 instead of f32 (bf16/f16 precision only)
  Epilogue epilogue = Epilogue::none;
  float beta = 0.0f;  // 1: y += x·Wᵀ (accumulate into y), 0: y is overwritten
};

// x: [M, K] (row stride ld_x)  W: [N, K] contiguous  bias: [N] (bias epilogues) or null, in y's
// dtype: f32, or bf16/f16 with y_in_input_type (cuBLASLt's default bias type is D's, the one its
// tables promise for every 16-bit output)
// y: [M, N] (row stride ld_y)   y = epilogue(x · Wᵀ + bias) + beta · y
// Runs on tach's stream of `device`; the algorithm cuBLASLt's heuristic picks for each shape is
// cached, and a 32 MiB workspace per device is allocated once (counted as `workspace`).
void linear(int device, void* y, const void* x, const void* W, const void* bias, const LinearArgs& a);

// A general row-major GEMM into f32, for training's transposed products:
//   C [M, N] = alpha · op(A) · op(B) + beta · C (+ bias [N] on every row when bias is set)
// op(A): A [M, K] (lda >= K) as stored, or trans_a: A stored [K, M] (lda >= M) read transposed.
// op(B): B [K, N] (ldb >= N) as stored, or trans_b: B stored [N, K] (ldb >= K) read transposed.
// A and B hold `precision`'s input type (f32 for f32 and tf32, else bf16/f16), C is f32 (ldc >= N).
// Same stream, workspace and plan cache as linear().
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  GemmPrecision precision = GemmPrecision::f32;
  const float* bias = nullptr;  // f32 [N] or null
};
void gemm(int device, float* C, const void* A, const void* B, const GemmArgs& a);

}  // namespace tach::cuda
