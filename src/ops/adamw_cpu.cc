#include <cmath>

#include "core/parallel.h"
#include "ops/adamw.h"

namespace tach::ops {

AdamWScalars adamw_scalars(int64_t step, const AdamWConfig& c, bool decay) {
  // torch computes the corrections in double from Python floats, then rounds to the tensor dtype.
  const double bc1 = 1.0 - std::pow(double(c.beta1), double(step));
  const double bc2_sqrt = std::sqrt(1.0 - std::pow(double(c.beta2), double(step)));
  AdamWScalars s;
  s.step_size = float(double(c.lr) / bc1);
  s.keep = decay ? 1.0f - c.lr * c.weight_decay : 1.0f;
  s.b1 = c.beta1, s.b2 = c.beta2, s.eps = c.eps, s.inv_bc2 = float(1.0 / bc2_sqrt);
  return s;
}

void adamw_update_cpu(float* param, const float* grad, float* m, float* v, int64_t n, int64_t step,
                      const AdamWConfig& c, bool decay, float grad_scale) {
  const AdamWScalars s = adamw_scalars(step, c, decay);
  const float step_size = s.step_size, keep = s.keep, b1 = s.b1, b2 = s.b2, eps = s.eps, inv_bc2 = s.inv_bc2;
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * grad_scale;  // the clipped gradient, rounded as a stored one
    param[i] *= keep;
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    param[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_bc2 + eps);
  }
}

void adamw_update_chunks_cpu(const AdamWTensors& t, int64_t step, const AdamWConfig& c, float grad_scale) {
  core::parallel_for(int64_t(t.chunks.size()), 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const AdamWTensors::Chunk& ch = t.chunks[size_t(k)];
      const size_t i = ch.tensor;
      adamw_update_cpu(t.params[i].data<float>() + ch.begin, t.grads[i].data<float>() + ch.begin,
                       t.m[i].data<float>() + ch.begin, t.v[i].data<float>() + ch.begin, ch.end - ch.begin, step, c,
                       t.decay[i] && c.weight_decay != 0.f, grad_scale);
    }
  });
}

}  // namespace tach::ops
