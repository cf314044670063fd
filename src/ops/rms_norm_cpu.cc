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

void rms_norm_heads_forward_cpu(float* x, int64_t ld, int64_t N, int64_t heads, int64_t D, const float* weight,
                                float eps, float* saved_in, float* rstd) {
  core::parallel_for(N, 16, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x + n * ld + h * D;
        if (saved_in) std::copy(v, v + D, saved_in + (n * heads + h) * D);
        float ss = 0;
#pragma omp simd reduction(+ : ss)
        for (int64_t d = 0; d < D; ++d) ss += v[d] * v[d];
        const float r = 1.0f / std::sqrt(ss / float(D) + eps);
        if (rstd) rstd[n * heads + h] = r;
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) v[d] = weight[d] * (v[d] * r);
      }
  });
}

void rms_norm_heads_backward_cpu(float* dx, int64_t ld, const float* inp, const float* weight, const float* rstd,
                                 float* dweight, int64_t N, int64_t heads, int64_t D) {
  // Chunks of tokens sum their own dweight, added in order: independent of the thread count.
  constexpr int64_t kRows = 64;
  const int64_t chunks = (N + kRows - 1) / kRows;
  std::vector<float> partial(size_t(chunks * D), 0.f);
  core::parallel_for(chunks, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      float* pw = partial.data() + k * D;
      for (int64_t n = k * kRows; n < std::min(N, (k + 1) * kRows); ++n)
        for (int64_t h = 0; h < heads; ++h) {
          float* g = dx + n * ld + h * D;  // d(out) in, d(in) out
          const float* v = inp + (n * heads + h) * D;
          const float r = rstd[n * heads + h];
          float dot = 0.f;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; ++d) dot += g[d] * weight[d] * v[d];
          const float k2 = r * r * r * dot / float(D);
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) {
            pw[d] += g[d] * v[d] * r;
            g[d] = r * g[d] * weight[d] - v[d] * k2;
          }
        }
    }
  });
  if (!dweight) return;
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t d = 0; d < D; ++d) dweight[d] += partial[size_t(k * D + d)];
}

}  // namespace tach::ops
