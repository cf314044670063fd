#include "cpu/int8_quant.h"

#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/parallel.h"

namespace tach::cpu {

namespace {

// oneDNN's ISA values are bit sets: an ISA includes every bit of the ones below it.
bool has_isa(dnnl::cpu_isa effective, dnnl::cpu_isa wanted) {
  const auto e = static_cast<unsigned>(effective), w = static_cast<unsigned>(wanted);
  return (e & w) == w;
}

bool int8_has_vnni() {
  static const bool vnni = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return has_isa(isa, dnnl::cpu_isa::avx512_core_vnni) || has_isa(isa, dnnl::cpu_isa::avx2_vnni);
  }();
  return vnni;
}

}  // namespace

int int8_weight_code_limit() { return int8_has_vnni() ? 127 : 63; }

std::string int8_scheme() {
  return int8_has_vnni() ? "s8 weights per channel, s8 activations per token, int32 sums (VNNI: exact)"
                         : "7-bit weights per channel (no VNNI: vpmaddubsw's int16 pairs must not saturate), s8 "
                           "activations per token, int32 sums";
}

void quantize_rows_symmetric(const float* x, int64_t rows, int64_t cols, int64_t ldx, int limit, int8_t* q,
                             float* scale) {
  core::parallel_for(rows, 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = x + r * ldx;
      float absmax = 0.f;
#pragma omp simd reduction(max : absmax)
      for (int64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(row[c]));
      scale[r] = absmax / float(limit);
      int8_t* out = q + r * cols;
      if (absmax == 0.f) {
        std::memset(out, 0, static_cast<size_t>(cols));
        continue;
      }
      const float inv = float(limit) / absmax;
      const float lim = float(limit);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) {
        // |row[c]| · inv <= limit up to rounding; the clamp keeps a rounding above it in range.
        const float v = std::nearbyint(row[c] * inv);
        out[c] = static_cast<int8_t>(v > lim ? lim : (v < -lim ? -lim : v));
      }
    }
  });
}

void dequantize_int32_inplace(float* y, int64_t M, int64_t N, int64_t ldy, const float* row_scale,
                              const float* col_scale, const float* bias) {
  core::parallel_for(M, 4, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      float* row = y + m * ldy;
      const float rs = row_scale[m];
#pragma omp simd
      for (int64_t n = 0; n < N; ++n) {
        int32_t acc;
        std::memcpy(&acc, row + n, sizeof acc);  // the GEMM wrote int32 here
        row[n] = float(acc) * rs * col_scale[n] + (bias ? bias[n] : 0.f);
      }
    }
  });
}

}  // namespace tach::cpu
