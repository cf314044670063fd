#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/pooling.h"

namespace tach::ops {

// Sums are in double: a mean over 512 tokens in f32 drifts by a few ulps from any other
// summation order, and double makes tach's result the exact one, not one of many.
void pooling_forward_cpu(float* out, int64_t out_stride, const float* hidden, const int32_t* mask, int64_t B, int64_t T,
                         int64_t C, PoolingMode mode) {
  std::vector<double> acc(static_cast<size_t>(C));
  for (int64_t b = 0; b < B; ++b) {
    const float* h = hidden + b * T * C;
    const int32_t* m = mask + b * T;
    float* o = out + b * out_stride;
    switch (mode) {
      case PoolingMode::cls: {
        // The first real token, so that a left-padded row (a decoder's) pools its own first token.
        int64_t first = 0;
        while (first < T && !m[first]) ++first;
        std::copy_n(h + (first == T ? 0 : first) * C, C, o);
        break;
      }
      case PoolingMode::last_token: {
        int64_t last = T - 1;
        while (last >= 0 && !m[last]) --last;
        if (last < 0)  // a row of padding only: sentence-transformers gathers a masked (zeroed) vector
          std::fill_n(o, C, 0.0f);
        else std::copy_n(h + last * C, C, o);
        break;
      }
      case PoolingMode::max:
        // Padding is masked to -inf, as sentence-transformers masks it (an all-padding row gives -inf).
        std::fill_n(o, C, -std::numeric_limits<float>::infinity());
        for (int64_t t = 0; t < T; ++t)
          if (m[t])
            for (int64_t c = 0; c < C; ++c) o[c] = std::max(o[c], h[t * C + c]);
        break;
      case PoolingMode::mean:
      case PoolingMode::mean_sqrt_len:
      case PoolingMode::weighted_mean: {
        std::fill(acc.begin(), acc.end(), 0.0);
        double weight_sum = 0;
        // weighted_mean's weights count from the first real token (1, 2, ...), whichever side is padded.
        int64_t first = 0;
        while (first < T && !m[first]) ++first;
        for (int64_t t = 0; t < T; ++t) {
          if (!m[t]) continue;
          const double w = mode == PoolingMode::weighted_mean ? double(t + 1 - first) : 1.0;
          weight_sum += w;
          for (int64_t c = 0; c < C; ++c) acc[size_t(c)] += w * double(h[t * C + c]);
        }
        // sentence-transformers clamps the count at 1e-9 so that an all-padding row gives zeros.
        double denom = std::max(weight_sum, 1e-9);
        if (mode == PoolingMode::mean_sqrt_len) denom = std::sqrt(denom);
        for (int64_t c = 0; c < C; ++c) o[c] = float(acc[size_t(c)] / denom);
        break;
      }
    }
  }
}

void l2_normalize_forward_cpu(float* x, int64_t B, int64_t E) {
  for (int64_t b = 0; b < B; ++b) {
    float* row = x + b * E;
    double ss = 0;
    for (int64_t e = 0; e < E; ++e) ss += double(row[e]) * row[e];
    const double norm = std::max(std::sqrt(ss), 1e-12);
    for (int64_t e = 0; e < E; ++e) row[e] = float(row[e] / norm);
  }
}

}  // namespace tach::ops
