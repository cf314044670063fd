#include "ops/masked_mean.h"

namespace tach::ops {

// Per row, out starts at 0 and adds each kept token's vector in token order; the count is a
// float of whole numbers (exact up to 2^24 tokens), as the CUDA kernel counts.
void masked_mean_forward_cpu(float* out, const float* x, const int32_t* mask, int64_t B, int64_t T, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    float* o = out + b * C;
    for (int64_t c = 0; c < C; ++c) o[c] = 0.0f;
    float kept = 0.0f;
    for (int64_t t = 0; t < T; ++t) {
      if (mask[b * T + t] == 0) continue;
      kept += 1.0f;
      const float* row = x + (b * T + t) * C;
      for (int64_t c = 0; c < C; ++c) o[c] += row[c];
    }
    for (int64_t c = 0; c < C; ++c) o[c] /= kept;
  }
}

void masked_mean_backward_cpu(float* dx, const float* dout, const int32_t* mask, int64_t B, int64_t T, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    float kept = 0.0f;
    for (int64_t t = 0; t < T; ++t) kept += mask[b * T + t] != 0 ? 1.0f : 0.0f;
    const float* d = dout + b * C;
    for (int64_t t = 0; t < T; ++t) {
      if (mask[b * T + t] == 0) continue;
      float* row = dx + (b * T + t) * C;
      for (int64_t c = 0; c < C; ++c) row[c] += d[c] / kept;
    }
  }
}

}  // namespace tach::ops
