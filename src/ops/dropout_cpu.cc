#include <cstring>

#include "core/parallel.h"
#include "ops/dropout.h"

namespace tach::ops {

void dropout_apply(float* out, const float* in, int64_t n, float p, uint64_t key, int64_t first_index) {
  if (p <= 0.f) {
    if (out != in) std::memmove(out, in, sizeof(float) * size_t(n));
    return;
  }
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = dropout_threshold(p);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) out[j] = dropout_keeps_at(key, first_index + j, threshold) ? in[j] * scale : 0.0f;
}

void dropout_forward_cpu(float* out, const float* x, int64_t n, float p, uint64_t key) {
  core::parallel_for(n, 1 << 15, [&](int64_t b, int64_t e) { dropout_apply(out + b, x + b, e - b, p, key, b); });
}

void dropout_backward_cpu(float* dx, const float* dout, int64_t n, float p, uint64_t key) {
  core::parallel_for(n, 1 << 15, [&](int64_t b, int64_t e) { dropout_apply(dx + b, dout + b, e - b, p, key, b); });
}

}  // namespace tach::ops
