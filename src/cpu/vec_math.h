// Vector helpers written so that GCC and clang auto-vectorise them under `omp simd` on any
// x86-64 ISA (SSE2 to AVX-512) without -ffast-math: branch-free float arithmetic only.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tach::cpu {

// exp(x) for f32 with < 2 ulp error on [-87.3, 88.7]; 0 below (where expf underflows to
// subnormals, 0 is within 1e-38 absolute), +inf above. Range reduction x = n*ln2 + r with
// |r| <= ln2/2 (ln2 split in two parts for accuracy), then a degree-6 polynomial for e^r.

inline float fast_exp(float x) {
  const float clamped = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  const float n = std::nearbyint(clamped * 1.44269504088896341f);  // round to nearest even (default mode)
  float r = clamped - n * 0.693145751953125f;                      // ln2 high part (exact in f32)
  r = r - n * 1.428606765330187e-06f;                              // ln2 low part
  // Taylor coefficients 1/k!, k = 6..0, by Horner.
  float p = 1.3888889e-3f;
  p = p * r + 8.3333338e-3f;
  p = p * r + 4.1666668e-2f;
  p = p * r + 1.6666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // Scale by 2^n through the exponent bits; n is in [-126, 128] after the clamp, and 2^n
  // is applied in two halves so that n = 128 does not overflow the bit trick.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t h1 = ni >> 1, h2 = ni - h1;
  const float s1 = std::bit_cast<float>(static_cast<int32_t>((h1 + 127) << 23));
  const float s2 = std::bit_cast<float>(static_cast<int32_t>((h2 + 127) << 23));
  const float y = p * s1 * s2;
  return x < -87.3f ? 0.0f : (x > 88.7f ? __builtin_inff() : y);
}

// erf(x) for f32, absolute error < 5e-7 (Abramowitz & Stegun 7.1.26, 1.5e-7 in exact
// arithmetic: 1 - t*P(t)*exp(-x^2) with t = 1/(1 + p|x|)), odd-symmetric.
inline float fast_erf(float x) {
  const float a = x < 0 ? -x : x;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float e = fast_exp(-a * a < -80.f ? -80.f : -a * a);  // floor: see gelu16 in vec_math.cc
  const float y = 1.0f - p * t * e;
  return x < 0 ? -y : y;
}

// GELU with the exact (erf) form, as torch.nn.functional.gelu's default: x/2 * (1 + erf(x/sqrt2)).
inline float gelu_erf(float x) { return 0.5f * x * (1.0f + fast_erf(x * 0.70710678118654752f)); }

// y[m, n] = gelu(y[m, n]) for an [M, N] block with row stride ld, across threads.
void gelu_erf_inplace(float* y, int64_t M, int64_t N, int64_t ld);

// In place: row[j] = exp(row[j] - max(row)) / sum, n >= 1. With AVX-512 a hand-written
// path (same algorithm, vscalefps for 2^n); otherwise loops the compiler vectorises.
void softmax_inplace(float* row, int64_t n);
// The scalar reference both paths are tested against.
void softmax_inplace_portable(float* row, int64_t n);

}  // namespace tach::cpu
