#include "ops/embedding.h"

#include "ops/dispatch.h"

namespace tach::ops {

OpCost embedding_cost(int64_t N, int64_t C, DType table_dtype) {
  OpCost c;
  c.bytes_read = double(N) * 4 + double(dtype_bytes(table_dtype, size_t(N * C)));
  c.bytes_written = double(N * C) * 4;
  return c;
}

void embedding_forward(Tensor& out, const Tensor& ids, const Tensor& table, bool accumulate) {
  check(ids.dtype() == DType::i32, "embedding: ids must be i32, got " + ids.describe());
  check(table.dim() == 2 && table.is_contiguous(),
        "embedding: table must be a contiguous [V, C], got " + table.describe());
  const int64_t N = ids.numel(), V = table.size(0), C = table.size(1);
  check(out.dtype() == DType::f32 && out.numel() == N * C && out.is_contiguous(),
        "embedding: out must be f32 with " + std::to_string(N) + " x " + std::to_string(C) + " elements, got " +
            out.describe());
  check_device("embedding", out.device(), {&ids, &table});
  [[maybe_unused]] const bool cuda = on_cuda("embedding", out.device(), table.dtype());
  const int32_t* id = ids.data<int32_t>();
  // Device ids cannot be read here without a copy and a wait; the models check them on the host
  // before copying them (model::check_batch), and the kernel reads no row outside the table.
  if (!cuda)
    for (int64_t n = 0; n < N; ++n)
      check(id[n] >= 0 && id[n] < V, "embedding: id " + std::to_string(id[n]) + " at position " + std::to_string(n) +
                                         " is outside the table of " + std::to_string(V) + " rows");
  core::Span span(core::SpanKind::op, "embedding");
  if (span.active()) {
    const OpCost c = embedding_cost(N, C, table.dtype());
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat(N, " ids of [", V, ", ", C, "] ", dtype_name(table.dtype())));
  }
  switch (table.dtype()) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
#if TACH_HAS_CUDA
      if (cuda) {
        embedding_forward_cuda(out.device().index, out.data<float>(), id, table.raw(), table.dtype(), N, C, V,
                               accumulate);
        return;
      }
#endif
      embedding_forward_cpu(out.data<float>(), id, table.raw(), table.dtype(), N, C, accumulate);
      return;
    default: unsupported("embedding", out.device(), table.dtype());
  }
}

OpCost embedding_backward_cost(int64_t N, int64_t C) {
  OpCost c;
  c.flops = double(N * C);
  c.bytes_read = double(N * C) * 8;  // dout and the table rows it adds to
  c.bytes_written = double(N * C) * 4;
  return c;
}

}  // namespace tach::ops
