#include "ops/copy_rows.h"

#include <cstring>

#include "ops/dispatch.h"

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

}  // namespace tach::ops
