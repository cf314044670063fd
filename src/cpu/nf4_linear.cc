#include "cpu/nf4_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "cpu/nf4_gemm.h"
#include "cpu/simd_sum.h"
#include "tach/error.h"

namespace tach::cpu {

namespace {

// The inputs split by parity, per row: xe[m, i] = x[m, 2i], xo[m, i] = x[m, 2i + 1], so that the
// high nibbles (even elements) and low nibbles (odd ones) of a byte run meet their inputs in
// order. xs: [M, 2, K / 2].
void split_by_parity(const float* x, int64_t M, int64_t ldx, int64_t K, float* xs) {
  for (int64_t m = 0; m < M; ++m) {
    float* even = xs + m * K;
    float* odd = even + K / 2;
    for (int64_t i = 0; i < K / 2; ++i) even[i] = x[m * ldx + 2 * i], odd[i] = x[m * ldx + 2 * i + 1];
  }
}

#if defined(__AVX512F__)
// Rows [n0, n1) of y for M input rows (M <= 4): one 64-weight block (32 bytes) at a time, its
// codes looked up once and used for every input row.
void gemv_rows(const uint8_t* codes, const float* absmax, const float* xs, int64_t M, int64_t K, int64_t n0, int64_t n1,
               float* y, int64_t ldy) {
  const __m512 book = _mm512_loadu_ps(nf4_code_book());
  const __m512i low_nibble = _mm512_set1_epi32(0x0F);
  const int64_t blocks = K / kNf4Block, half = K / 2;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = codes + n * half;
    const float* scale = absmax + n * blocks;
    __m512 total[Nf4Linear::kGemvRows] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                                          _mm512_setzero_ps()};
    for (int64_t b = 0; b < blocks; ++b) {
      __m512 w[4];  // 64 weights: even elements 0..31 in w[0], w[2]; odd ones in w[1], w[3]
      for (int h = 0; h < 2; ++h) {
        const __m512i v =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + b * 32 + h * 16)));
        w[2 * h] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), book);
        w[2 * h + 1] = _mm512_permutexvar_ps(_mm512_and_si512(v, low_nibble), book);
      }
      const __m512 s = _mm512_set1_ps(scale[b]);
      for (int64_t m = 0; m < M; ++m) {
        const float* even = xs + m * K + b * 32;
        const float* odd = even + half;
        __m512 acc = _mm512_mul_ps(w[0], _mm512_loadu_ps(even));
        acc = _mm512_fmadd_ps(w[1], _mm512_loadu_ps(odd), acc);
        acc = _mm512_fmadd_ps(w[2], _mm512_loadu_ps(even + 16), acc);
        acc = _mm512_fmadd_ps(w[3], _mm512_loadu_ps(odd + 16), acc);
        total[m] = _mm512_fmadd_ps(acc, s, total[m]);
      }
    }
    for (int64_t m = 0; m < M; ++m) y[m * ldy + n] = _mm512_reduce_add_ps(total[m]);
  }
}
#elif defined(__AVX2__)
// 16 entries in two registers of 8: permute within each, then pick by the index's bit 3.
inline __m256 lookup16(__m256i idx, __m256 book_lo, __m256 book_hi) {
  const __m256 lo = _mm256_permutevar8x32_ps(book_lo, idx), hi = _mm256_permutevar8x32_ps(book_hi, idx);
  return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}

void gemv_rows(const uint8_t* codes, const float* absmax, const float* xs, int64_t M, int64_t K, int64_t n0, int64_t n1,
               float* y, int64_t ldy) {
  const __m256 book_lo = _mm256_loadu_ps(nf4_code_book()), book_hi = _mm256_loadu_ps(nf4_code_book() + 8);
  const __m256i low_nibble = _mm256_set1_epi32(0x0F);
  const int64_t blocks = K / kNf4Block, half = K / 2;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = codes + n * half;
    const float* scale = absmax + n * blocks;
    __m256 total[Nf4Linear::kGemvRows] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                                          _mm256_setzero_ps()};
    for (int64_t b = 0; b < blocks; ++b) {
      __m256 acc[Nf4Linear::kGemvRows] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                                          _mm256_setzero_ps()};
      for (int q = 0; q < 4; ++q) {  // 8 bytes: 8 even and 8 odd elements
        const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + b * 32 + q * 8)));
        const __m256 we = lookup16(_mm256_srli_epi32(v, 4), book_lo, book_hi);
        const __m256 wo = lookup16(_mm256_and_si256(v, low_nibble), book_lo, book_hi);
        for (int64_t m = 0; m < M; ++m) {
          const float* even = xs + m * K + b * 32 + q * 8;
          acc[m] = _mm256_fmadd_ps(we, _mm256_loadu_ps(even), acc[m]);
          acc[m] = _mm256_fmadd_ps(wo, _mm256_loadu_ps(even + half), acc[m]);
        }
      }
      const __m256 s = _mm256_set1_ps(scale[b]);
      for (int64_t m = 0; m < M; ++m) total[m] = _mm256_fmadd_ps(acc[m], s, total[m]);
    }
    for (int64_t m = 0; m < M; ++m) y[m * ldy + n] = lane_sum(total[m]);
  }
}
#else
void gemv_rows(const uint8_t* codes, const float* absmax, const float* xs, int64_t M, int64_t K, int64_t n0, int64_t n1,
               float* y, int64_t ldy) {
  const float* book = nf4_code_book();
  const int64_t blocks = K / kNf4Block, half = K / 2;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t m = 0; m < M; ++m) {
      float total = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        float acc = 0;
        for (int64_t i = b * 32; i < b * 32 + 32; ++i) {
          const uint8_t c = codes[n * half + i];
          acc += book[c >> 4] * xs[m * K + i] + book[c & 15] * xs[m * K + half + i];
        }
        total += acc * absmax[n * blocks + b];
      }
      y[m * ldy + n] = total;
    }
}
#endif

}  // namespace

void nf4_gemv(const uint8_t* codes, const float* absmax, const float* x, int64_t M, int64_t ldx, int64_t N, int64_t K,
              float* y, int64_t ldy) {
  check(K % kNf4Block == 0 && M <= Nf4Linear::kGemvRows, "nf4_gemv: K must be a multiple of 64 and M at most 4");
  if (M == 0) return;
  Tensor xs = Tensor::empty({M, K}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  split_by_parity(x, M, ldx, K, xs.data<float>());
  core::parallel_for(N, 16,
                     [&](int64_t n0, int64_t n1) { gemv_rows(codes, absmax, xs.data<float>(), M, K, n0, n1, y, ldy); });
}

Nf4Linear::Nf4Linear(const Tensor& weight, const Tensor& bias, FusedActivation activation) : activation_(activation) {
  check(weight.dim() == 2, "Nf4Linear: weight must be [out, in], got " + weight.describe());
  N_ = weight.size(0), K_ = weight.size(1);
  check(N_ * K_ % kNf4Block == 0, "linear in nf4: the weight " + weight.describe() +
                                      " does not split into blocks of 64 (bitsandbytes' block size)");
  const Tensor w = weight.to(DType::f32, MemoryCategory::workspace).contiguous();
  w_ = quantize_nf4_matrix(w.data<float>(), {N_}, K_);
  absmax_ = Tensor::empty({N_ * K_ / kNf4Block}, DType::f32, Device::cpu(), MemoryCategory::weights);
  w_.parts[0].absmax(absmax_.data<float>());
  if (bias.defined()) {
    check(bias.numel() == N_, "Nf4Linear: bias " + bias.describe() + " does not match weight " + weight.describe());
    bias_ = bias.to(DType::f32, MemoryCategory::weights).contiguous();
  }
}

size_t Nf4Linear::packed_bytes() const { return size_t(w_.bytes()) + absmax_.nbytes(); }

void Nf4Linear::forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const {
  if (M == 0) return;
  check(ldx >= K_ && ldy >= N_, "Nf4Linear::forward: row strides smaller than the matrix");
  const float* b = bias_.defined() ? bias_.data<float>() : nullptr;
  if (M <= kGemvRows && K_ % kNf4Block == 0) {
    nf4_gemv(w_.parts[0].codes.data<uint8_t>(), absmax_.data<float>(), x, M, ldx, N_, K_, y, ldy);
    add_bias_rows(y, M, N_, ldy, b);
  } else if (ldx == K_ && ldy == N_) {
    nf4_linear_forward(y, x, w_, b, M, N_, K_);
  } else {
    // Dense rows for the tiled GEMM, which takes contiguous [M, K] and [M, N].
    Tensor xd = Tensor::empty({M, K_}, DType::f32, Device::cpu(), MemoryCategory::workspace);
    Tensor yd = Tensor::empty({M, N_}, DType::f32, Device::cpu(), MemoryCategory::workspace);
    for (int64_t m = 0; m < M; ++m) std::memcpy(xd.data<float>() + m * K_, x + m * ldx, sizeof(float) * size_t(K_));
    nf4_linear_forward(yd.data<float>(), xd.data<float>(), w_, b, M, N_, K_);
    for (int64_t m = 0; m < M; ++m) std::memcpy(y + m * ldy, yd.data<float>() + m * N_, sizeof(float) * size_t(N_));
  }
  apply_fused_activation(activation_, y, M, N_, ldy);
}

}  // namespace tach::cpu
