#include "ops/add.h"

#include "core/parallel.h"
#include "core/trace.h"
#include "ops/dispatch.h"
#include "tach/error.h"

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

OpCost scale_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = c.bytes_written = double(n) * 4;
  return c;
}

void scale_inplace(Tensor& x, float s) {
  check(x.dtype() == DType::f32 && x.is_contiguous(), "scale: expected contiguous f32, got " + x.describe());
  if (x.device().kind != DeviceKind::cpu) unsupported("scale", x.device(), x.dtype());
  const int64_t n = x.numel();
  core::Span span(core::SpanKind::op, "scale");
  if (span.active()) {
    const OpCost c = scale_cost(n);
    span.set_cost(c.flops, c.bytes());
  }
  float* p = x.data<float>();
  core::parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) p[i] *= s;
  });
}

}  // namespace tach::ops
