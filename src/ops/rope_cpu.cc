#include "core/parallel.h"
#include "ops/rope.h"
#include "tach/error.h"

namespace tach::ops {

void rope_rotate_cpu(float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const RopeTable& table, bool inverse) {
  const int64_t F = D / 2;
  check(table.cos.numel() == N * F, "rope: the table has " + std::to_string(table.cos.numel()) + " entries for " +
                                        std::to_string(N) + " rows of " + std::to_string(F) + " frequencies");
  const float* cs = table.cos.data<float>();
  const float* sn = table.sin.data<float>();
  const float sign = inverse ? -1.0f : 1.0f;  // sin(-a) = -sin(a), cos(-a) = cos(a)
  core::parallel_for(N, 8, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* c = cs + n * F;
      const float* s = sn + n * F;
      for (int64_t h = 0; h < heads; ++h) {
        float* a = x + n * ld + h * D;  // first half
        float* b = a + F;               // second half
#pragma omp simd
        for (int64_t i = 0; i < F; ++i) {
          const float x1 = a[i], x2 = b[i], si = sign * s[i];
          a[i] = x1 * c[i] - x2 * si;  // q*cos + rotate_half(q)*sin, first half: -x2
          b[i] = x2 * c[i] + x1 * si;  // second half: +x1
        }
      }
    }
  });
}

}  // namespace tach::ops
