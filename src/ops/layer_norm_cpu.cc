#include <cmath>

#include "core/parallel.h"
#include "ops/layer_norm.h"

namespace tach::ops {

void layer_norm_forward_cpu(float* out, const float* x, const float* residual, const float* gamma, const float* beta,
                            int64_t N, int64_t C, float eps) {
  core::parallel_for(N, 8, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* xr = x + n * C;
      const float* rr = residual ? residual + n * C : nullptr;
      float* o = out + n * C;
      // Sum first into out (x + residual), then statistics over it: out may alias x.
      float sum = 0.f;
      if (rr) {
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < C; ++c) {
          o[c] = xr[c] + rr[c];
          sum += o[c];
        }
      } else {
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < C; ++c) {
          o[c] = xr[c];
          sum += o[c];
        }
      }
      const float mean = sum / float(C);
      float var = 0.f;
#pragma omp simd reduction(+ : var)
      for (int64_t c = 0; c < C; ++c) {
        const float d = o[c] - mean;
        var += d * d;
      }
      const float rstd = 1.0f / std::sqrt(var / float(C) + eps);
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) o[c] = (o[c] - mean) * rstd * gamma[c] + beta[c];
    }
  });
}

}  // namespace tach::ops
