#include "train/grad_norm.h"

#include <algorithm>
#include <cmath>

namespace tach::train {

double clip_grad_norm(const std::vector<std::pair<float*, int64_t>>& grads, double max_norm) {
  double sum = 0;
  for (const auto& [g, n] : grads)
    for (int64_t i = 0; i < n; ++i) sum += double(g[i]) * double(g[i]);
  const double norm = std::sqrt(sum);
  if (max_norm > 0) {
    const float coef = float(std::min(1.0, max_norm / (norm + 1e-6)));
    if (coef < 1.0f)
      for (const auto& [g, n] : grads)
        for (int64_t i = 0; i < n; ++i) g[i] *= coef;
  }
  return norm;
}

}  // namespace tach::train
