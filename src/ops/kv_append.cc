#include "ops/kv_append.h"

#include "ops/dispatch.h"

namespace tach::ops {

OpCost kv_append_cost(const KvAppendArgs& a) {
  OpCost c;
  c.bytes_read = double(2 * a.B * a.T * a.width) * 4;
  c.bytes_written = c.bytes_read;
  return c;
}

void kv_append(float* cache_k, float* cache_v, const float* qkv, const KvAppendArgs& a) {
  check(a.B >= 0 && a.T >= 0 && a.width > 0 && a.past >= 0 && a.past + a.T <= a.capacity &&
            a.k_col + a.width <= a.ld_qkv && a.v_col + a.width <= a.ld_qkv,
        "kv_append: " + std::to_string(a.T) + " rows of " + std::to_string(a.width) + " after " +
            std::to_string(a.past) + " in a cache of " + std::to_string(a.capacity) + " (fused rows of " +
            std::to_string(a.ld_qkv) + ")");
  check(!a.device_past || a.device.kind == DeviceKind::cuda, "kv_append: a cache length on the device is for CUDA");
  if (a.B == 0 || a.T == 0) return;
  core::Span span(core::SpanKind::op, "kv_append");
  if (span.active()) {
    const OpCost c = kv_append_cost(a);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.T, ", ", a.width, "] f32 x2 at ", a.past, " of ", a.capacity));
  }
#if TACH_HAS_CUDA
  if (on_cuda("kv_append", a.device, DType::f32)) {
    kv_append_cuda(a.device.index, cache_k, cache_v, qkv, a);
    return;
  }
#else
  on_cuda("kv_append", a.device, DType::f32);
#endif
  kv_append_cpu(cache_k, cache_v, qkv, a);
}

}  // namespace tach::ops
