// RMSNorm's CPU kernels: the forward (with the residual add fused) and its backward.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/rms_norm.h"

namespace tach::ops {

void rms_norm_forward_cpu(float* out, float* h, const float* delta, const float* weight, int64_t N, int64_t C,
                          float eps, float* rstd_out) {
  core::parallel_for(N, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* x = h + r * C;
      if (delta) {
        const float* d = delta + r * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) x[c] += d[c];
      }
      float ss = 0;
#pragma omp simd reduction(+ : ss)
      for (int64_t c = 0; c < C; ++c) ss += x[c] * x[c];
      const float rstd = 1.0f / std::sqrt(ss / float(C) + eps);
      if (rstd_out) rstd_out[r] = rstd;
      float* y = out + r * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) y[c] = weight[c] * (x[c] * rstd);
    }
  });
}

void rms_norm_backward_cpu(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                           const float* rstd, int64_t N, int64_t C) {
  // Fixed chunks of rows sum their own dweight, added in chunk order afterwards: the result does
  // not depend on the thread count (as layer_norm_backward_cpu).
  constexpr int64_t kRows = 64;
  const int64_t chunks = (N + kRows - 1) / kRows;
  std::vector<float> partial(size_t(chunks * C), 0.f);
  core::parallel_for(chunks, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      float* pw = partial.data() + k * C;
      for (int64_t n = k * kRows; n < std::min(N, (k + 1) * kRows); ++n) {
        const float* g = dout + n * C;
        const float* x = inp + n * C;
        float* d = dinp + n * C;
        const float r = rstd[n];
        float dot = 0.f;  // Σ_c dout*weight*inp
#pragma omp simd reduction(+ : dot)
        for (int64_t c = 0; c < C; ++c) dot += g[c] * weight[c] * x[c];
        const float k2 = r * r * r * dot / float(C);
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) {
          pw[c] += g[c] * x[c] * r;
          d[c] += r * g[c] * weight[c] - x[c] * k2;
        }
      }
    }
  });
  if (!dweight) return;  // a frozen norm (LoRA): dinp only
  core::parallel_for(C, 64, [&](int64_t c0, int64_t c1) {
    for (int64_t k = 0; k < chunks; ++k)
      for (int64_t c = c0; c < c1; ++c) dweight[c] += partial[size_t(k * C + c)];
  });
}

}  // namespace tach::ops
