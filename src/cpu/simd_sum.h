// The sum of a vector register's lanes, for kernels that keep per-row partial sums in registers.
#pragma once

#include <immintrin.h>

namespace tach::cpu {

#if defined(__AVX2__)
inline float lane_sum(__m256 v) {
  const __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 r2 = _mm_add_ps(r, _mm_movehl_ps(r, r));
  return _mm_cvtss_f32(_mm_add_ss(r2, _mm_shuffle_ps(r2, r2, 1)));
}
#endif

}  // namespace tach::cpu
