#include "train/grad_norm.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"

namespace tach::train {

double global_grad_norm(const GradList& grads) {
  double sum = 0;
  for (const auto& [g, n] : grads) {
    // Four partial sums break the dependency chain so the loop vectorises; their order is fixed.
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (int k = 0; k < 4; ++k) s[k] += double(g[i + k]) * double(g[i + k]);
    for (; i < n; ++i) s[0] += double(g[i]) * double(g[i]);
    sum += (s[0] + s[1]) + (s[2] + s[3]);
  }
  return std::sqrt(sum);
}

void scale_to_norm(const GradList& grads, double norm, double max_norm) {
  const float coef = float(std::min(1.0, max_norm / (norm + 1e-6)));
  if (coef >= 1.0f) return;
  for (const auto& [g, n] : grads) {
    float* p = g;
    core::parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] *= coef;
    });
  }
}

double clip_grad_norm(const GradList& grads, double max_norm) {
  const double norm = global_grad_norm(grads);
  if (max_norm > 0) scale_to_norm(grads, norm, max_norm);
  return norm;
}

}  // namespace tach::train
