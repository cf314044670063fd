#include "ops/add.h"

#include "core/parallel.h"
#include "core/trace.h"

namespace tach::ops {

OpCost add_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = 8.0 * double(n);
  c.bytes_written = 4.0 * double(n);
  return c;
}

void add_inplace(float* y, const float* x, int64_t n) {
  core::Span span(core::SpanKind::op, "add");
  if (span.active()) {
    const OpCost c = add_cost(n);
    span.set_cost(c.flops, c.bytes());
  }
  core::parallel_for(n, 1 << 15, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) y[i] += x[i];
  });
}

}  // namespace tach::ops
