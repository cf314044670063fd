#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/dropout.h"
#include "ops/layer_norm.h"

namespace tach::ops {

namespace {

// o = (s - mean) * rstd * gamma + beta for one row whose sum `total` is known (o may be s; beta
// null: no bias, as ModernBERT's LayerNorms); statistics two-pass in f32, as PyTorch computes
// them. Returns mean and rstd.
inline void normalize_row(float* o, const float* s, float total, const float* gamma, const float* beta, int64_t C,
                          float eps, float* mean_out, float* rstd_out) {
  const float mean = total / float(C);
  float var = 0.f;
#pragma omp simd reduction(+ : var)
  for (int64_t c = 0; c < C; ++c) {
    const float d = s[c] - mean;
    var += d * d;
  }
  const float rstd = 1.0f / std::sqrt(var / float(C) + eps);
  *mean_out = mean;
  *rstd_out = rstd;
  if (beta) {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] = (s[c] - mean) * rstd * gamma[c] + beta[c];
  } else {
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] = (s[c] - mean) * rstd * gamma[c];
  }
}

}  // namespace

void layer_norm_forward_cpu(float* out, const float* x, const float* residual, const float* gamma, const float* beta,
                            int64_t N, int64_t C, float eps, float* mean_out, float* rstd_out) {
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
      float mean, rstd;
      normalize_row(o, o, sum, gamma, beta, C, eps, &mean, &rstd);
      if (mean_out) mean_out[n] = mean, rstd_out[n] = rstd;
    }
  });
}

void layer_norm_backward_cpu(float* dinp, float* dgamma, float* dbeta, const float* dout, const float* inp,
                             const float* gamma, const float* mean, const float* rstd, int64_t N, int64_t C) {
  // Rows split into fixed chunks (not per thread): each chunk sums its own dgamma and dbeta, and
  // the chunks are added in order afterwards, so the result does not depend on the thread count.
  constexpr int64_t kRows = 64;
  const int64_t chunks = (N + kRows - 1) / kRows;
  std::vector<float> partial(size_t(chunks * 2 * C), 0.f);  // per chunk: dgamma [C], dbeta [C]
  core::parallel_for(chunks, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      float* pg = partial.data() + k * 2 * C;
      float* pb = pg + C;
      for (int64_t n = k * kRows; n < std::min(N, (k + 1) * kRows); ++n) {
        const float* g = dout + n * C;
        const float* in = inp + n * C;
        float* d = dinp + n * C;
        const float m = mean[n], r = rstd[n];
        // dnorm = dout * gamma; dinp = r * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
        float dnorm_mean = 0.f, dnorm_norm_mean = 0.f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
        for (int64_t c = 0; c < C; ++c) {
          const float norm = (in[c] - m) * r;
          const float dnorm = g[c] * gamma[c];
          dnorm_mean += dnorm;
          dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= float(C);
        dnorm_norm_mean /= float(C);
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) {
          const float norm = (in[c] - m) * r;
          pb[c] += g[c];
          pg[c] += g[c] * norm;
          d[c] += r * (g[c] * gamma[c] - dnorm_mean - norm * dnorm_norm_mean);
        }
      }
    }
  });
  if (!dgamma) return;  // a frozen LayerNorm (LoRA): dinp only
  core::parallel_for(C, 64, [&](int64_t c0, int64_t c1) {
    for (int64_t k = 0; k < chunks; ++k) {
      const float* pg = partial.data() + k * 2 * C;
      for (int64_t c = c0; c < c1; ++c) {
        dgamma[c] += pg[c];
        if (dbeta) dbeta[c] += pg[C + c];
      }
    }
  });
}

void add_layer_norm_forward_cpu(float* out, float* h, const float* delta, const float* gamma, const float* beta,
                                int64_t N, int64_t C, float eps, float* mean, float* rstd) {
  core::parallel_for(N, 8, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      float* hr = h + n * C;
      const float* dr = delta ? delta + n * C : nullptr;
      float total = 0.f;
      if (dr) {
#pragma omp simd reduction(+ : total)
        for (int64_t c = 0; c < C; ++c) {
          hr[c] += dr[c];
          total += hr[c];
        }
      } else {
#pragma omp simd reduction(+ : total)
        for (int64_t c = 0; c < C; ++c) total += hr[c];
      }
      float m, r;
      normalize_row(out + n * C, hr, total, gamma, beta, C, eps, &m, &r);
      if (mean) mean[n] = m, rstd[n] = r;
    }
  });
}

void dropout_add_layer_norm_forward_cpu(float* sum, float* out, const float* branch, const float* x, const float* gamma,
                                        const float* beta, int64_t N, int64_t C, float eps, float dropout_p,
                                        uint64_t dropout_key, float* mean, float* rstd) {
  core::parallel_for(N, 8, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      float* s = sum + n * C;
      float* o = out + n * C;
      const float* xr = x + n * C;
      dropout_apply(s, branch + n * C, C, dropout_p, dropout_key, n * C);
      float total = 0.f;
#pragma omp simd reduction(+ : total)
      for (int64_t c = 0; c < C; ++c) {
        s[c] += xr[c];
        total += s[c];
      }
      normalize_row(o, s, total, gamma, beta, C, eps, &mean[n], &rstd[n]);
    }
  });
}

}  // namespace tach::ops
