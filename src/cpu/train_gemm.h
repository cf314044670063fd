// The GEMM the training kernels call: f32 in and out, with the inputs taken at the run's training
// precision. In bf16 (mixed precision, as torch.autocast runs linear and matmul) both inputs are
// rounded to bf16 and the products accumulate in f32; the master weights, norms, softmax, losses
// and the optimizer stay in f32. Where oneDNN has a bf16 matmul for this CPU it runs one (in hardware
// on AVX512_BF16/AMX); elsewhere tach emulates it: the inputs are rounded to bf16 values in f32
// storage and multiplied by the f32 GEMM — the same numbers, no speed-up (docs/perf.md).
#pragma once

#include <cstdint>

namespace tach::cpu {

enum class TrainPrecision { f32, bf16 };

// Process-wide: a training run sets it for its steps (TrainPrecisionScope) and restores it after.
TrainPrecision train_precision();
struct TrainPrecisionScope {
  explicit TrainPrecisionScope(TrainPrecision p);
  ~TrainPrecisionScope();
  TrainPrecisionScope(const TrainPrecisionScope&) = delete;
  TrainPrecisionScope& operator=(const TrainPrecisionScope&) = delete;
  TrainPrecision previous;
};

// Whether bf16 training GEMMs run on oneDNN's bf16 matmul here (false: emulated, as above). Its
// own kernels may emulate bf16 too: on AVX-512 without AVX512_BF16 they run slower than f32.
bool bf16_train_gemm_onednn();
// Whether that matmul multiplies bf16 in hardware (AVX512_BF16 or AMX, and oneDNN allowed to use
// them): only then can bf16 inputs beat f32.
bool bf16_gemm_in_hardware();

// As sgemm (cpu/gemm.h), on the default backend, at train_precision().
void train_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// x rounded to the nearest bf16 (ties to even), kept in f32.
inline float round_to_bf16(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf and NaN as they are
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float r;
  __builtin_memcpy(&r, &u, 4);
  return r;
}

}  // namespace tach::cpu
