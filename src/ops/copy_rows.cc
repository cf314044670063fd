#include "ops/copy_rows.h"

#include <cstring>

#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost copy_rows_cost(int64_t rows, int64_t cols) {
  OpCost c;
  c.bytes_read = double(rows * cols) * 4;
  c.bytes_written = double(rows * cols) * 4;
  return c;
}

void copy_rows(Device device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
               int64_t cols) {
  check(rows >= 0 && cols >= 0 && ld_dst >= cols && ld_src >= cols,
        "copy_rows: " + std::to_string(rows) + " rows of " + std::to_string(cols) + " with strides " +
            std::to_string(ld_dst) + " and " + std::to_string(ld_src));
  if (rows == 0 || cols == 0) return;
  core::Span span(core::SpanKind::op, "copy_rows");
  if (span.active()) {
    const OpCost c = copy_rows_cost(rows, cols);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", rows, ", ", cols, "] f32"));
  }
#if TACH_HAS_CUDA
  if (on_cuda("copy_rows", device, DType::f32)) {
    copy_rows_cuda(device.index, dst, ld_dst, src, ld_src, rows, cols);
    return;
  }
#else
  on_cuda("copy_rows", device, DType::f32);
#endif
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * ld_dst, src + r * ld_src, size_t(cols) * sizeof(float));
}

void copy_rows(const Tensor& dst, const Tensor& src) {
  const int64_t rows = src.dim() == 2 ? src.shape()[0] : -1, cols = src.dim() == 2 ? src.shape()[1] : -1;
  expect_rows("copy_rows", "src", src, rows, cols);
  expect_rows("copy_rows", "dst", dst, rows, cols);
  check_device("copy_rows", src.device(), {&dst});
  if (dense(dst) && dense(src)) {  // one block: one copy
    copy_rows(src.device(), dst.data<float>(), rows * cols, src.data<float>(), rows * cols, 1, rows * cols);
    return;
  }
  copy_rows(src.device(), dst.data<float>(), rows > 1 ? dst.strides()[0] : cols, src.data<float>(),
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

// Both directions: gather (dst row m = src row rows[m]) or scatter (dst row rows[m] = src row m),
// m < M, over N rows on the indexed side.
void move_rows(const char* op, const Tensor& dst, const Tensor& src, const Tensor& rows, int64_t M, int64_t C,
               int64_t N, bool scatter) {
  check_device(op, src.device(), {&dst, &rows});
  [[maybe_unused]] const bool cuda = on_cuda(op, src.device(), DType::f32);
  if (M == 0 || C == 0) return;
  core::Span span(core::SpanKind::op, "copy_rows");
  if (span.active()) {
    OpCost c = copy_rows_cost(M, C);
    c.bytes_read += double(M) * 4;  // the row ids
    span.set_cost(c.flops, c.bytes());
  }
  const int32_t* r = rows.data<int32_t>();
  float* d = dst.data<float>();
  const float* s = src.data<float>();
#if TACH_HAS_CUDA
  if (cuda)
    return scatter ? scatter_rows_cuda(src.device().index, d, r, s, M, C, N)
                   : gather_rows_cuda(src.device().index, d, s, r, M, C, N);
#endif
  for (int64_t m = 0; m < M; ++m) {
    const int64_t to = scatter ? r[m] : m, from = scatter ? m : r[m];
    std::memcpy(d + to * C, s + from * C, size_t(C) * sizeof(float));
  }
}

}  // namespace

void gather_rows(const Tensor& dst, const Tensor& src, const Tensor& rows) {
  const int64_t N = src.dim() == 2 ? src.shape()[0] : -1, C = src.dim() == 2 ? src.shape()[1] : -1;
  const int64_t M = rows.numel();
  expect_matrix("gather_rows", "src", src, N, C);
  expect_matrix("gather_rows", "dst", dst, M, C);
  check_row_ids("gather_rows", rows, M, N);
  move_rows("gather_rows", dst, src, rows, M, C, N, false);
}

void scatter_rows(const Tensor& dst, const Tensor& rows, const Tensor& src) {
  const int64_t N = dst.dim() == 2 ? dst.shape()[0] : -1, C = dst.dim() == 2 ? dst.shape()[1] : -1;
  const int64_t M = rows.numel();
  expect_matrix("scatter_rows", "dst", dst, N, C);
  expect_matrix("scatter_rows", "src", src, M, C);
  check_row_ids("scatter_rows", rows, M, N);
  move_rows("scatter_rows", dst, src, rows, M, C, N, true);
}

}  // namespace tach::ops
