#include "ops/copy_rows.h"

#include <cstring>

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost copy_rows_cost(int64_t rows, int64_t cols, DType dtype) {
  OpCost c;
  c.bytes_read = double(dtype_bytes(dtype, size_t(rows * cols)));
  c.bytes_written = c.bytes_read;
  return c;
}

void copy_rows(Device device, DType dtype, void* dst, int64_t ld_dst, const void* src, int64_t ld_src, int64_t rows,
               int64_t cols) {
  check(rows >= 0 && cols >= 0 && ld_dst >= cols && ld_src >= cols,
        "copy_rows: " + std::to_string(rows) + " rows of " + std::to_string(cols) + " with strides " +
            std::to_string(ld_dst) + " and " + std::to_string(ld_src));
  check_activation_dtype("copy_rows", device, dtype);
  if (rows == 0 || cols == 0) return;
  core::Span span(core::SpanKind::op, "copy_rows");
  if (span.active()) {
    const OpCost c = copy_rows_cost(rows, cols, dtype);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", rows, ", ", cols, "] ", dtype_name(dtype)));
  }
#if TACH_HAS_CUDA
  if (on_cuda("copy_rows", device, dtype)) {
    copy_rows_cuda(device.index, dtype, dst, ld_dst, src, ld_src, rows, cols);
    return;
  }
#else
  on_cuda("copy_rows", device, dtype);
#endif
  const size_t row_bytes = dtype_bytes(dtype, size_t(cols)), element = dtype_bytes(dtype, 1);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(dst) + size_t(r * ld_dst) * element,
                static_cast<const char*>(src) + size_t(r * ld_src) * element, row_bytes);
}

void copy_rows(Device device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
               int64_t cols) {
  copy_rows(device, DType::f32, dst, ld_dst, src, ld_src, rows, cols);
}

namespace {

// A [rows, cols] view of an activation dtype with unit column stride (rows may be strided).
void expect_row_view(const char* name, const Tensor& t, int64_t rows, int64_t cols, DType dtype) {
  if (!t.defined() || t.dtype() != dtype || !is_activation_dtype(dtype) || t.dim() != 2 || t.shape()[0] != rows ||
      t.shape()[1] != cols || (cols > 1 && t.strides()[1] != 1) || (rows > 1 && t.strides()[0] < cols))
    bad_tensor("copy_rows", name, t,
               "a " + std::string(dtype_name(dtype)) + " [" + std::to_string(rows) + ", " + std::to_string(cols) +
                   "] view with unit column stride (f32, bf16 or f16, src's dtype)");
}

}  // namespace

void copy_rows(const Tensor& dst, const Tensor& src) {
  const int64_t rows = src.dim() == 2 ? src.shape()[0] : -1, cols = src.dim() == 2 ? src.shape()[1] : -1;
  const DType A = src.defined() ? src.dtype() : DType::f32;
  expect_row_view("src", src, rows, cols, A);
  expect_activation_dtype("copy_rows", "dst", dst, A);
  expect_row_view("dst", dst, rows, cols, A);
  check_device("copy_rows", src.device(), {&dst});
  if (dense(dst) && dense(src)) {  // one block: one copy
    copy_rows(src.device(), A, dst.raw(), rows * cols, src.raw(), rows * cols, 1, rows * cols);
    return;
  }
  copy_rows(src.device(), A, dst.raw(), rows > 1 ? dst.strides()[0] : cols, src.raw(),
            rows > 1 ? src.strides()[0] : cols, rows, cols);
}

namespace {

// rows [M] i32 in [0, N), on the CPU (device row lists are checked before they are copied).
void check_row_ids(const char* op, const Tensor& rows, int64_t M, int64_t N) {
  if (!rows.defined() || rows.dtype() != DType::i32 || rows.numel() != M || !dense(rows))
    bad_tensor(op, "rows", rows, "a contiguous i32 tensor of " + std::to_string(M) + " elements");
  if (rows.device().kind != DeviceKind::cpu) return;
  const int32_t* r = rows.data<int32_t>();
  for (int64_t m = 0; m < M; ++m)
    if (r[m] < 0 || r[m] >= N)
      throw Error(std::string(op) + ": row " + std::to_string(r[m]) + " at " + std::to_string(m) + " is outside [0, " +
                  std::to_string(N) + ")");
}

// A contiguous [rows, cols] matrix of an activation dtype A.
void expect_matrix_in(const char* op, const char* name, const Tensor& t, int64_t rows, int64_t cols, DType A) {
  expect_activation_dtype(op, name, t, A);
  if (!t.defined() || !is_activation_dtype(t.dtype()) || t.dim() != 2 || t.shape()[0] != rows || t.shape()[1] != cols ||
      !dense(t))
    bad_tensor(op, name, t,
               "a contiguous f32, bf16 or f16 [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

// Both directions: gather (dst row m = src row rows[m]) or scatter (dst row rows[m] = src row m),
// m < M, over N rows on the indexed side.
void move_rows(const char* op, const Tensor& dst, const Tensor& src, const Tensor& rows, int64_t M, int64_t C,
               [[maybe_unused]] int64_t N, bool scatter) {
  const DType A = src.dtype();
  check_device(op, src.device(), {&dst, &rows});
  check_activation_dtype(op, src.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda(op, src.device(), A);
  if (M == 0 || C == 0) return;
  core::Span span(core::SpanKind::op, "copy_rows");
  if (span.active()) {
    OpCost c = copy_rows_cost(M, C, A);
    c.bytes_read += double(M) * 4;  // the row ids
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", M, ", ", C, "] ", dtype_name(A), scatter ? " scattered" : " gathered"));
  }
  const int32_t* r = rows.data<int32_t>();
#if TACH_HAS_CUDA
  if (cuda)
    return scatter ? scatter_rows_cuda(src.device().index, A, dst.raw(), r, src.raw(), M, C, N)
                   : gather_rows_cuda(src.device().index, A, dst.raw(), src.raw(), r, M, C, N);
#endif
  float* d = dst.data<float>();
  const float* s = src.data<float>();
  for (int64_t m = 0; m < M; ++m) {
    const int64_t to = scatter ? r[m] : m, from = scatter ? m : r[m];
    std::memcpy(d + to * C, s + from * C, size_t(C) * sizeof(float));
  }
}

}  // namespace

void gather_rows(const Tensor& dst, const Tensor& src, const Tensor& rows) {
  const int64_t N = src.dim() == 2 ? src.shape()[0] : -1, C = src.dim() == 2 ? src.shape()[1] : -1;
  const int64_t M = rows.numel();
  const DType A = src.defined() ? src.dtype() : DType::f32;
  expect_matrix_in("gather_rows", "src", src, N, C, A);
  expect_matrix_in("gather_rows", "dst", dst, M, C, A);
  check_row_ids("gather_rows", rows, M, N);
  move_rows("gather_rows", dst, src, rows, M, C, N, false);
}

void scatter_rows(const Tensor& dst, const Tensor& rows, const Tensor& src) {
  const int64_t N = dst.dim() == 2 ? dst.shape()[0] : -1, C = dst.dim() == 2 ? dst.shape()[1] : -1;
  const int64_t M = rows.numel();
  const DType A = dst.defined() ? dst.dtype() : DType::f32;
  expect_matrix_in("scatter_rows", "dst", dst, N, C, A);
  expect_matrix_in("scatter_rows", "src", src, M, C, A);
  check_row_ids("scatter_rows", rows, M, N);
  move_rows("scatter_rows", dst, src, rows, M, C, N, true);
}

}  // namespace tach::ops
