#include "ops/rope_kv_append.h"

#include <string>

#include "core/trace.h"
#include "ops/activation_dtype.h"
#include "ops/dispatch.h"

namespace tach::ops {

OpCost rope_kv_append_cost(const KvAppendArgs& a, int64_t q_heads, int64_t D) {
  const int64_t kv_heads = D > 0 ? a.width / D : 0;
  OpCost c = rope_cost(a.B * a.T, q_heads + kv_heads, D, a.dtype);
  c += kv_append_cost(a);
  c.bytes_read -= double(dtype_bytes(a.dtype, size_t(a.B * a.T * a.width)));  // the keys, read once
  return c;
}

void rope_kv_append(void* qkv, void* cache_k, void* cache_v, const KvAppendArgs& a, int64_t q_heads, int64_t D,
                    const RopeTable& table) {
  const int64_t N = a.B * a.T;
  check(D > 0 && D % 2 == 0 && q_heads > 0 && a.width % D == 0 && a.k_col == q_heads * D,
        "rope_kv_append: keys of " + std::to_string(a.width) + " values at column " + std::to_string(a.k_col) +
            " after " + std::to_string(q_heads) + " query heads of " + std::to_string(D) +
            ": the keys must follow the queries, whole heads of an even size");
  for (const Tensor* t : {&table.cos, &table.sin})
    if (t->dtype() != DType::f32 || t->numel() != N * (D / 2) || !dense(*t))
      bad_tensor("rope_kv_append", "cos/sin table", *t,
                 "a contiguous f32 [" + std::to_string(N) + ", " + std::to_string(D / 2) + "] for " +
                     std::to_string(N) + " rows");
  check_device("rope_kv_append", a.device, {&table.cos, &table.sin});
  check_activation_dtype("rope_kv_append", a.device, a.dtype);
  [[maybe_unused]] const bool cuda = on_cuda("rope_kv_append", a.device, a.dtype);
  if (!cuda) {  // the CPU: the two ops, whose spans and checks say what ran
    Tensor rows = Tensor::from_borrowed(qkv, {N, a.ld_qkv}, a.dtype, nullptr, a.device);
    rope_forward(rows, q_heads, a.width / D, D, table);
    kv_append(cache_k, cache_v, qkv, a);
    return;
  }
  // kv_append's checks of the cache's extents, without its kernel.
  check(a.B >= 0 && a.T >= 0 && a.past >= 0 && a.past + a.T <= a.capacity && a.k_col + a.width <= a.ld_qkv &&
            a.v_col + a.width <= a.ld_qkv,
        "rope_kv_append: " + std::to_string(a.T) + " rows of " + std::to_string(a.width) + " after " +
            std::to_string(a.past) + " in a cache of " + std::to_string(a.capacity) + " (fused rows of " +
            std::to_string(a.ld_qkv) + ")");
  if (N == 0) return;
  core::Span span(core::SpanKind::op, "rope_kv_append");
  if (span.active()) {
    const OpCost c = rope_kv_append_cost(a, q_heads, D);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("q [", N, ", ", q_heads, "x", D, "], k|v [", N, ", ", a.width, "] ",
                                 dtype_name(a.dtype), " at ", a.past, " of ", a.capacity));
  }
#if TACH_HAS_CUDA
  rope_kv_append_cuda(a.device.index, qkv, cache_k, cache_v, a, q_heads, D, table.cos.data<float>(),
                      table.sin.data<float>());
#endif
}

}  // namespace tach::ops
