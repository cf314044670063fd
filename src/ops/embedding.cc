#include "ops/embedding.h"

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost embedding_cost(int64_t N, int64_t C, DType table_dtype, DType out_dtype) {
  OpCost c;
  c.bytes_read = double(N) * 4 + double(dtype_bytes(table_dtype, size_t(N * C)));
  c.bytes_written = double(dtype_bytes(out_dtype, size_t(N * C)));
  return c;
}

void embedding_forward(Tensor& out, const Tensor& ids, const Tensor& table, bool accumulate) {
  check(ids.dtype() == DType::i32, "embedding: ids must be i32, got " + ids.describe());
  check(table.dim() == 2 && table.is_contiguous(),
        "embedding: table must be a contiguous [V, C], got " + table.describe());
  const int64_t N = ids.numel(), V = table.size(0), C = table.size(1);
  check(is_activation_dtype(out.dtype()) && out.numel() == N * C && out.is_contiguous(),
        "embedding: out must be contiguous f32, bf16 or f16 with " + std::to_string(N) + " x " + std::to_string(C) +
            " elements, got " + out.describe());
  check_device("embedding", out.device(), {&ids, &table});
  check_activation_dtype("embedding", out.device(), out.dtype());
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
    const OpCost c = embedding_cost(N, C, table.dtype(), out.dtype());
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat(N, " ids of [", V, ", ", C, "] ", dtype_name(table.dtype()), " -> ",
                                 dtype_name(out.dtype()), accumulate ? " +=" : ""));
  }
  switch (table.dtype()) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
#if TACH_HAS_CUDA
      if (cuda) {
        embedding_forward_cuda(out.device().index, out.raw(), out.dtype(), id, table.raw(), table.dtype(), N, C, V,
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

namespace {

// ids: [N] i32, each in [0, V). Device ids are checked on the host before they are copied.
void check_ids(const char* op, const Tensor& ids, int64_t N, int64_t V) {
  if (!ids.defined() || ids.dtype() != DType::i32 || ids.numel() != N || !dense(ids))
    bad_tensor(op, "ids", ids, "a contiguous i32 tensor of " + std::to_string(N) + " elements");
  if (ids.device().kind != DeviceKind::cpu) return;
  const int32_t* id = ids.data<int32_t>();
  for (int64_t n = 0; n < N; ++n)
    if (id[n] < 0 || id[n] >= V)
      throw Error(std::string(op) + ": id " + std::to_string(id[n]) + " at position " + std::to_string(n) +
                  " is outside the table of " + std::to_string(V) + " rows");
}

}  // namespace

void embedding_forward_train(const Tensor& out, std::initializer_list<EmbeddingLookup> lookups) {
  const char* op = "embedding";
  if (lookups.size() == 0) throw Error("embedding: no table to look up");
  const int64_t C = out.dim() == 2 ? out.shape()[1] : -1, N = out.dim() == 2 ? out.shape()[0] : -1;
  expect_matrix(op, "out", out, N, C);
  for (const EmbeddingLookup& l : lookups) {
    if (l.table.dim() != 2) bad_tensor(op, "table", l.table, "an f32 [V, " + std::to_string(C) + "]");
    expect_matrix(op, "table", l.table, l.table.shape()[0], C);
    check_ids(op, l.ids, N, l.table.shape()[0]);
    check_device(op, out.device(), {&l.ids, &l.table});
  }
  [[maybe_unused]] const bool cuda = on_cuda(op, out.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    OpCost c;
    for (size_t i = 0; i < lookups.size(); ++i) c += embedding_cost(N, C, DType::f32);
    c.bytes_written = double(N * C) * 4;  // one output, summed into
    span.set_cost(c.flops, c.bytes());
  }
  bool accumulate = false;
  for (const EmbeddingLookup& l : lookups) {
#if TACH_HAS_CUDA
    if (cuda)
      embedding_forward_cuda(out.device().index, out.data<float>(), l.ids.data<int32_t>(), l.table.data<float>(),
                             DType::f32, N, C, l.table.shape()[0], accumulate);
    else
#endif
      embedding_forward_cpu(out.data<float>(), l.ids.data<int32_t>(), l.table.data<float>(), DType::f32, N, C,
                            accumulate);
    accumulate = true;
  }
}

void embedding_backward(const Tensor& dout, std::initializer_list<EmbeddingGrad> grads) {
  const char* op = "embedding_backward";
  const int64_t C = dout.dim() == 2 ? dout.shape()[1] : -1, N = dout.dim() == 2 ? dout.shape()[0] : -1;
  expect_matrix(op, "dout", dout, N, C);
  int64_t tables = 0;
  for (const EmbeddingGrad& g : grads) {
    if (!g.dtable.defined()) continue;
    if (g.dtable.dim() != 2) bad_tensor(op, "dtable", g.dtable, "an f32 [V, " + std::to_string(C) + "]");
    expect_matrix(op, "dtable", g.dtable, g.dtable.shape()[0], C);
    check_ids(op, g.ids, N, g.dtable.shape()[0]);
    check_device(op, dout.device(), {&g.ids, &g.dtable});
    ++tables;
  }
  if (tables == 0) return;
  [[maybe_unused]] const bool cuda = on_cuda(op, dout.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    OpCost c;
    for (int64_t i = 0; i < tables; ++i) c += embedding_backward_cost(N, C);
    span.set_cost(c.flops, c.bytes());
  }
  for (const EmbeddingGrad& g : grads) {
    if (!g.dtable.defined()) continue;
#if TACH_HAS_CUDA
    if (cuda) {
      embedding_backward_cuda(dout.device().index, g.dtable.data<float>(), g.ids.data<int32_t>(), dout.data<float>(), N,
                              C, g.dtable.shape()[0], g.padding_idx);
      continue;
    }
#endif
    embedding_backward_cpu(g.dtable.data<float>(), g.ids.data<int32_t>(), dout.data<float>(), N, C, g.padding_idx);
  }
}

}  // namespace tach::ops
