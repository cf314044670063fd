#include <cstring>

#include "core/parallel.h"
#include "ops/dropout.h"

namespace tach::ops {

namespace {

void apply_mask(float* out, const float* in, int64_t n, float p, uint64_t key) {
  if (p <= 0.f) {
    if (out != in) std::memcpy(out, in, sizeof(float) * size_t(n));
    return;
  }
  const float scale = 1.0f / (1.0f - p);
  core::parallel_for(n, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = dropout_keeps(key, i, p) ? in[i] * scale : 0.0f;
  });
}

}  // namespace

void dropout_forward_cpu(float* out, const float* x, int64_t n, float p, uint64_t key) { apply_mask(out, x, n, p, key); }

void dropout_backward_cpu(float* dx, const float* dout, int64_t n, float p, uint64_t key) {
  apply_mask(dx, dout, n, p, key);
}

}  // namespace tach::ops
