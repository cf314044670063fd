#include <cmath>

#include "core/parallel.h"
#include "ops/activation.h"

namespace tach::ops {

void relu_forward_cpu(float* y, const float* x, int64_t n) {
  core::parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
  });
}

void relu_backward_cpu(float* dx, const float* y, const float* dy, int64_t n) {
  core::parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx[i] += y[i] > 0.f ? dy[i] : 0.f;
  });
}

void tanh_forward_cpu(float* y, const float* x, int64_t n) {
  core::parallel_for(n, 1 << 12, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = std::tanh(x[i]);
  });
}

void tanh_backward_cpu(float* dx, const float* y, const float* dy, int64_t n) {
  core::parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx[i] += dy[i] * (1.f - y[i] * y[i]);
  });
}

}  // namespace tach::ops
