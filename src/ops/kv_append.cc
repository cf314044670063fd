#include "ops/kv_append.h"

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"

namespace tach::ops {

OpCost kv_append_cost(const KvAppendArgs& a) {
  OpCost c;
  c.bytes_read = double(dtype_bytes(a.dtype, size_t(2 * a.B * a.T * a.width)));
  c.bytes_written = c.bytes_read;
  return c;
}

void kv_append(float* cache_k, float* cache_v, const float* qkv, const KvAppendArgs& a) {
  check(a.dtype == DType::f32, "kv_append: float pointers for a " + std::string(dtype_name(a.dtype)) +
                                   " cache; pass the cache's pointers as void*");
  kv_append(static_cast<void*>(cache_k), static_cast<void*>(cache_v), static_cast<const void*>(qkv), a);
}

void kv_append(void* cache_k, void* cache_v, const void* qkv, const KvAppendArgs& a) {
  check(a.B >= 0 && a.T >= 0 && a.width > 0 && a.past >= 0 && a.past + a.T <= a.capacity &&
            a.k_col + a.width <= a.ld_qkv && a.v_col + a.width <= a.ld_qkv,
        "kv_append: " + std::to_string(a.T) + " rows of " + std::to_string(a.width) + " after " +
            std::to_string(a.past) + " in a cache of " + std::to_string(a.capacity) + " (fused rows of " +
            std::to_string(a.ld_qkv) + ")");
  check(!a.device_past || a.device.kind == DeviceKind::cuda, "kv_append: a cache length on the device is for CUDA");
  check_activation_dtype("kv_append", a.device, a.dtype);
  if (a.B == 0 || a.T == 0) return;
  core::Span span(core::SpanKind::op, "kv_append");
  if (span.active()) {
    const OpCost c = kv_append_cost(a);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.T, ", ", a.width, "] ", dtype_name(a.dtype), " x2 at ", a.past,
                                 " of ", a.capacity));
  }
#if TACH_HAS_CUDA
  if (on_cuda("kv_append", a.device, a.dtype)) {
    kv_append_cuda(a.device.index, cache_k, cache_v, qkv, a);
    return;
  }
#else
  on_cuda("kv_append", a.device, a.dtype);
#endif
  kv_append_cpu(static_cast<float*>(cache_k), static_cast<float*>(cache_v), static_cast<const float*>(qkv), a);
}

}  // namespace tach::ops
