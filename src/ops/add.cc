#include "ops/add.h"

#include "core/parallel.h"
#include "core/trace.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"
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

void add_inplace(const Tensor& y, const Tensor& x) {
  if (y.defined() && x.defined() && y.dtype() == DType::f32 && x.dtype() == DType::f32 && y.dim() == 2 &&
      x.shape() == y.shape() && !(dense(y) && dense(x))) {
    // Strided rows: one op over them all.
    const int64_t rows = y.shape()[0], cols = y.shape()[1];
    expect_rows("add", "y", y, rows, cols);
    expect_rows("add", "x", x, rows, cols);
    check_device("add", y.device(), {&x});
    [[maybe_unused]] const bool cuda = on_cuda("add", y.device(), y.dtype());
    core::Span span(core::SpanKind::op, "add");
    if (span.active()) {
      const OpCost c = add_cost(rows * cols);
      span.set_cost(c.flops, c.bytes());
    }
    float* yp = y.data<float>();
    const float* xp = x.data<float>();
    const int64_t ldy = y.strides()[0], ldx = x.strides()[0];
#if TACH_HAS_CUDA
    if (cuda) return add_rows_cuda(y.device().index, yp, ldy, xp, ldx, rows, cols);
#endif
    for (int64_t r = 0; r < rows; ++r) {
      float* yr = yp + r * ldy;
      const float* xr = xp + r * ldx;
#pragma omp simd
      for (int64_t i = 0; i < cols; ++i) yr[i] += xr[i];
    }
    return;
  }
  if (!(y.defined() && x.defined() && y.dtype() == DType::f32 && x.dtype() == DType::f32 && dense(y) && dense(x) &&
        y.numel() == x.numel()))
    throw Error("add: expected two contiguous f32 tensors of one size, got " + y.describe() + " and " + x.describe());
  check_device("add", y.device(), {&x});
#if TACH_HAS_CUDA
  if (on_cuda("add", y.device(), y.dtype())) {
    core::Span span(core::SpanKind::op, "add");
    if (span.active()) {
      const OpCost c = add_cost(y.numel());
      span.set_cost(c.flops, c.bytes());
    }
    return add_inplace_cuda(y.device().index, y.data<float>(), x.data<float>(), y.numel());
  }
#else
  on_cuda("add", y.device(), y.dtype());
#endif
  add_inplace(y.data<float>(), x.data<float>(), y.numel());
}

OpCost scale_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = c.bytes_written = double(n) * 4;
  return c;
}

void scale_inplace(Tensor& x, float s) {
  check(x.dtype() == DType::f32 && x.is_contiguous(), "scale: expected contiguous f32, got " + x.describe());
  [[maybe_unused]] const bool cuda = on_cuda("scale", x.device(), x.dtype());
  const int64_t n = x.numel();
  core::Span span(core::SpanKind::op, "scale");
  if (span.active()) {
    const OpCost c = scale_cost(n);
    span.set_cost(c.flops, c.bytes());
  }
  float* p = x.data<float>();
#if TACH_HAS_CUDA
  if (cuda) return scale_inplace_cuda(x.device().index, p, s, n);
#endif
  core::parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) p[i] *= s;
  });
}

}  // namespace tach::ops
