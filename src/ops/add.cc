#include "ops/add.h"

#include "core/parallel.h"
#include "core/trace.h"
#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"
#include "tach/error.h"

namespace tach::ops {

OpCost add_cost(int64_t n, DType dtype) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = 2.0 * double(dtype_bytes(dtype, size_t(n)));
  c.bytes_written = double(dtype_bytes(dtype, size_t(n)));
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

namespace {

// y, x: [rows, cols] views with unit column stride (rows strided, or the whole tensor as one row
// when both are dense); the CPU's loop over f32 rows.
void add_rows_cpu(float* y, int64_t ldy, const float* x, int64_t ldx, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* yr = y + r * ldy;
    const float* xr = x + r * ldx;
#pragma omp simd
    for (int64_t i = 0; i < cols; ++i) yr[i] += xr[i];
  }
}

}  // namespace

void add_inplace(const Tensor& y, const Tensor& x) {
  const DType A = y.defined() ? y.dtype() : DType::f32;
  if (y.defined() && x.defined()) expect_activation_dtype("add", "x", x, A);
  const bool both_dense = y.defined() && x.defined() && dense(y) && dense(x);
  if (y.defined() && x.defined() && is_activation_dtype(A) && y.dim() == 2 && x.shape() == y.shape() && !both_dense) {
    // Strided rows: one op over them all.
    const int64_t rows = y.shape()[0], cols = y.shape()[1];
    for (const Tensor* t : {&y, &x})
      if ((cols > 1 && t->strides()[1] != 1) || (rows > 1 && t->strides()[0] < cols))
        bad_tensor("add", t == &y ? "y" : "x", *t,
                   "a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] view with unit column stride");
    check_device("add", y.device(), {&x});
    check_activation_dtype("add", y.device(), A);
    [[maybe_unused]] const bool cuda = on_cuda("add", y.device(), A);
    core::Span span(core::SpanKind::op, "add");
    if (span.active()) {
      const OpCost c = add_cost(rows * cols, A);
      span.set_cost(c.flops, c.bytes());
      span.set_detail(core::concat("[", rows, ", ", cols, "] ", dtype_name(A), " strided rows"));
    }
    const int64_t ldy = y.strides()[0], ldx = x.strides()[0];
#if TACH_HAS_CUDA
    if (cuda) return add_rows_cuda(y.device().index, A, y.raw(), ldy, x.raw(), ldx, rows, cols);
#endif
    return add_rows_cpu(y.data<float>(), ldy, x.data<float>(), ldx, rows, cols);
  }
  if (!(both_dense && is_activation_dtype(A) && y.numel() == x.numel()))
    throw Error("add: expected two contiguous f32, bf16 or f16 tensors of one size and dtype, got " + y.describe() +
                " and " + x.describe());
  check_device("add", y.device(), {&x});
  check_activation_dtype("add", y.device(), A);
#if TACH_HAS_CUDA
  if (on_cuda("add", y.device(), A)) {
    core::Span span(core::SpanKind::op, "add");
    if (span.active()) {
      const OpCost c = add_cost(y.numel(), A);
      span.set_cost(c.flops, c.bytes());
      span.set_detail(core::concat("[", y.numel(), "] ", dtype_name(A)));
    }
    return add_rows_cuda(y.device().index, A, y.raw(), y.numel(), x.raw(), x.numel(), 1, y.numel());
  }
#else
  on_cuda("add", y.device(), A);
#endif
  add_inplace(y.data<float>(), x.data<float>(), y.numel());
}

OpCost scale_cost(int64_t n, DType dtype) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = c.bytes_written = double(dtype_bytes(dtype, size_t(n)));
  return c;
}

void scale_inplace(Tensor& x, float s) {
  const DType A = x.dtype();
  check(is_activation_dtype(A) && x.is_contiguous(),
        "scale: expected contiguous f32, bf16 or f16, got " + x.describe());
  check_activation_dtype("scale", x.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda("scale", x.device(), A);
  const int64_t n = x.numel();
  core::Span span(core::SpanKind::op, "scale");
  if (span.active()) {
    const OpCost c = scale_cost(n, A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", n, "] ", dtype_name(A)));
  }
#if TACH_HAS_CUDA
  if (cuda) return scale_inplace_cuda(x.device().index, A, x.raw(), s, n);
#endif
  float* p = x.data<float>();
  core::parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) p[i] *= s;
  });
}

}  // namespace tach::ops
