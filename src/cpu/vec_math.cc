#include "cpu/vec_math.h"

#include "core/parallel.h"

#if defined(__AVX512F__) && !defined(__clang__)
// GCC 12 warns inside its own AVX-512 headers about the _mm512_undefined_ps() operand of masked
// intrinsics (GCC bug 105593): silenced for these intrinsics only (clang has no such warning).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#elif defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace tach::cpu {

#if defined(__AVX512F__)
namespace {

// The same algorithm as fast_exp (clamp, n = round(x*log2 e), two-part ln2 reduction,
// degree-6 polynomial), with vscalefps doing the 2^n scaling.
inline __m512 exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3f), hi = _mm512_set1_ps(88.7f);
  const __m512 c = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), c);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.3888889e-3f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3333338e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1666668e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666667e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  __m512 y = _mm512_scalef_ps(p, n);
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y, _mm512_setzero_ps());
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), y, _mm512_set1_ps(__builtin_inff()));
}

inline __m512 gelu16(__m512 x) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 a = _mm512_abs_ps(z);
  const __m512 t =
      _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(a, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  // exp(-a^2) floored at e^-80: beyond it erf is 1 in f32 anyway, and the floor keeps p*t*e
  // out of the subnormal range, where each multiply would cost a microcode assist.
  const __m512 e = exp16(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(a, a)), _mm512_set1_ps(-80.f)));
  __m512 erf = _mm512_fnmadd_ps(_mm512_mul_ps(p, t), e, _mm512_set1_ps(1.0f));  // 1 - p*t*e, for |z|
  // Restore the sign of z: erf is odd.
  erf = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(erf),
                                             _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(INT32_MIN))));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), erf));
}

inline __mmask16 tail_mask(int64_t remaining) {
  return remaining >= 16 ? __mmask16(0xffff) : __mmask16((1u << remaining) - 1);
}

}  // namespace

void softmax_inplace(float* row, int64_t n) {
  __m512 mx = _mm512_set1_ps(-__builtin_inff());
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, row + j));
  }
  const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + j), vmax));
    _mm512_mask_storeu_ps(row + j, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    _mm512_mask_storeu_ps(row + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + j), inv));
  }
}

static void gelu_row(float* row, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = tail_mask(n - j);
    _mm512_mask_storeu_ps(row + j, m, gelu16(_mm512_maskz_loadu_ps(m, row + j)));
  }
}

#else  // portable: loops the compiler vectorises

void softmax_inplace(float* row, int64_t n) {
  float mx = row[0];
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    row[j] = fast_exp(row[j] - mx);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

static void gelu_row(float* row, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) row[j] = gelu_erf(row[j]);
}

#endif

void softmax_inplace_portable(float* row, int64_t n) {
  float mx = row[0];
  for (int64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  float sum = 0.f;
  for (int64_t j = 0; j < n; ++j) {
    row[j] = fast_exp(row[j] - mx);
    sum += row[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

void gelu_erf_inplace(float* y, int64_t M, int64_t N, int64_t ld) {
  core::parallel_for(M, 4, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) gelu_row(y + m * ld, N);
  });
}

}  // namespace tach::cpu
