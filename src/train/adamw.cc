#include "train/adamw.h"

#include <cmath>

#include "tach/error.h"

namespace tach::train {

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, int64_t step, const AdamWConfig& c,
                  bool decay) {
  check(step >= 1, "adamw: step counts from 1");
  check(std::isfinite(c.lr) && c.lr >= 0, "adamw: learning rate must be a finite number >= 0");
  // torch computes the corrections in double from Python floats, then rounds to the tensor dtype.
  const double bc1 = 1.0 - std::pow(double(c.beta1), double(step));
  const double bc2_sqrt = std::sqrt(1.0 - std::pow(double(c.beta2), double(step)));
  const float step_size = float(double(c.lr) / bc1);
  const float keep = decay ? 1.0f - c.lr * c.weight_decay : 1.0f;
  const float b1 = c.beta1, b2 = c.beta2, eps = c.eps, inv_bc2 = float(1.0 / bc2_sqrt);
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    param[i] *= keep;
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    param[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_bc2 + eps);
  }
}

}  // namespace tach::train
