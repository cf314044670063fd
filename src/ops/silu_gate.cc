#include "ops/silu_gate.h"

#include "core/parallel.h"
#include "cpu/vec_math.h"

namespace tach::ops {

OpCost silu_gate_cost(int64_t N, int64_t I) {
  OpCost c;
  c.flops = double(N * I) * 6;
  c.bytes_read = double(N * I) * 8;
  c.bytes_written = double(N * I) * 4;
  return c;
}

void silu_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I) {
  core::parallel_for(N, 4, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* g = gate_up + n * 2 * I;
      const float* u = g + I;
      float* y = out + n * I;
#pragma omp simd
      for (int64_t i = 0; i < I; ++i) y[i] = g[i] / (1.0f + cpu::fast_exp(-g[i])) * u[i];
    }
  });
}

}  // namespace tach::ops
