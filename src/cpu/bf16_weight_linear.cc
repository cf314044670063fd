#include "cpu/bf16_weight_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "cpu/simd_sum.h"
#include "tach/error.h"

namespace tach::cpu {

namespace {

// Rows [n0, n1) of y; each weight row is read once for all M inputs. A bf16 value is the top half
// of an f32: widening is a shift by 16.
void gemv_rows(const uint16_t* w, const float* x, int64_t M, int64_t ldx, int64_t K, int64_t n0, int64_t n1, float* y,
               int64_t ldy) {
  for (int64_t n = n0; n < n1; ++n) {
    const uint16_t* row = w + n * K;
    int64_t k = 0;
    float sum[Bf16WeightLinear::kGemvRows] = {};
#if defined(__AVX512F__)
    __m512 acc[Bf16WeightLinear::kGemvRows] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                                               _mm512_setzero_ps()};
    for (; k + 16 <= K; k += 16) {
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k));
      const __m512 wv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
      for (int64_t m = 0; m < M; ++m) acc[m] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + m * ldx + k), acc[m]);
    }
    for (int64_t m = 0; m < M; ++m) sum[m] = _mm512_reduce_add_ps(acc[m]);
#elif defined(__AVX2__)
    __m256 acc[Bf16WeightLinear::kGemvRows] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                                               _mm256_setzero_ps()};
    for (; k + 8 <= K; k += 8) {
      const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k));
      const __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
      for (int64_t m = 0; m < M; ++m) acc[m] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + m * ldx + k), acc[m]);
    }
    for (int64_t m = 0; m < M; ++m) sum[m] = lane_sum(acc[m]);
#endif
    for (; k < K; ++k) {  // the tail (and everything, without AVX2)
      const float wk = bf16_to_f32(row[k]);
      for (int64_t m = 0; m < M; ++m) sum[m] += wk * x[m * ldx + k];
    }
    for (int64_t m = 0; m < M; ++m) y[m * ldy + n] = sum[m];
  }
}

}  // namespace

void bf16_weight_gemv(const uint16_t* w, const float* x, int64_t M, int64_t ldx, int64_t N, int64_t K, float* y,
                      int64_t ldy) {
  check(M <= Bf16WeightLinear::kGemvRows, "bf16_weight_gemv: at most 4 rows");
  if (M == 0) return;
  core::parallel_for(N, 16, [&](int64_t n0, int64_t n1) { gemv_rows(w, x, M, ldx, K, n0, n1, y, ldy); });
}

Bf16WeightLinear::Bf16WeightLinear(const Tensor& weight, const Tensor& bias, FusedActivation activation)
    : activation_(activation) {
  check(weight.dim() == 2, "Bf16WeightLinear: weight must be [out, in], got " + weight.describe());
  N_ = weight.size(0), K_ = weight.size(1);
  w_ = weight.to(DType::bf16, MemoryCategory::weights).contiguous();
  if (bias.defined()) {
    check(bias.numel() == N_, "Bf16WeightLinear: bias " + bias.describe() + " does not match " + weight.describe());
    bias_ = bias.to(DType::f32, MemoryCategory::weights).contiguous();
  }
}

void Bf16WeightLinear::forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const {
  if (M == 0) return;
  check(ldx >= K_ && ldy >= N_, "Bf16WeightLinear::forward: row strides smaller than the matrix");
  const uint16_t* w = w_.data<uint16_t>();
  if (M <= kGemvRows) {
    bf16_weight_gemv(w, x, M, ldx, N_, K_, y, ldy);
  } else {
    // Tiles of about 2^20 weights widened to f32, each multiplied into its columns of y.
    const int64_t rows = std::min(N_, std::max<int64_t>(16, ((int64_t(1) << 20) / K_) / 16 * 16));
    Tensor tile = Tensor::empty({rows, K_}, DType::f32, Device::cpu(), MemoryCategory::workspace);
    for (int64_t n0 = 0; n0 < N_; n0 += rows) {
      const int64_t r = std::min(rows, N_ - n0);
      convert_to_f32(DType::bf16, w + n0 * K_, tile.data<float>(), size_t(r * K_));
      sgemm(default_gemm_backend(), false, true, M, r, K_, 1.f, x, ldx, tile.data<float>(), K_, 0.f, y + n0, ldy);
    }
  }
  add_bias_rows(y, M, N_, ldy, bias_.defined() ? bias_.data<float>() : nullptr);
  apply_fused_activation(activation_, y, M, N_, ldy);
}

}  // namespace tach::cpu
