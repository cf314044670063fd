#include <cstring>

#include "ops/kv_append.h"

namespace tach::ops {

void kv_append_cpu(float* cache_k, float* cache_v, const float* qkv, const KvAppendArgs& a) {
  const size_t row_bytes = size_t(a.width) * sizeof(float);
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t t = 0; t < a.T; ++t) {
      const float* row = qkv + (b * a.T + t) * a.ld_qkv;
      const int64_t at = (b * a.capacity + a.past + t) * a.width;
      std::memcpy(cache_k + at, row + a.k_col, row_bytes);
      std::memcpy(cache_v + at, row + a.v_col, row_bytes);
    }
}

}  // namespace tach::ops
