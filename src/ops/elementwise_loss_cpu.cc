#include <algorithm>
#include <cmath>

#include "ops/elementwise_loss.h"

namespace tach::ops {

double mse_forward_cpu(const float* pred, const float* target, int64_t N) {
  double total = 0;
  for (int64_t i = 0; i < N; ++i) total += double(pred[i] - target[i]) * double(pred[i] - target[i]);
  return N ? total / double(N) : 0.0;
}

void mse_backward_cpu(float* dpred, const float* pred, const float* target, int64_t N, float scale) {
  const float k = 2.0f * scale / float(N);
  for (int64_t i = 0; i < N; ++i) dpred[i] += k * (pred[i] - target[i]);
}

double bce_with_logits_forward_cpu(const float* logits, const float* target, int64_t N) {
  double total = 0;
  for (int64_t i = 0; i < N; ++i) {
    const double x = logits[i], y = target[i];
    total += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::abs(x)));
  }
  return N ? total / double(N) : 0.0;
}

void bce_with_logits_backward_cpu(float* dlogits, const float* logits, const float* target, int64_t N, float scale) {
  const float k = scale / float(N);
  for (int64_t i = 0; i < N; ++i) {
    const float s = 1.0f / (1.0f + std::exp(-logits[i]));
    dlogits[i] += k * (s - target[i]);
  }
}

}  // namespace tach::ops
