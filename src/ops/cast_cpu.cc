// The cast on the CPU: core's conversions (round to nearest even), in blocks of rows that a
// thread converts through a small f32 buffer when neither side is f32 (bf16 ↔ f16).
#include <cstring>

#include "core/parallel.h"
#include "ops/cast.h"
#include "tach/error.h"

namespace tach::ops {

void cast_cpu(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n) {
  const size_t src_size = dtype_bytes(src_dtype, 1), dst_size = dtype_bytes(dst_dtype, 1);
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, size_t(n) * src_size);
    return;
  }
  constexpr int64_t kBlock = 4096;  // elements per task; its f32 staging buffer is 16 KiB
  core::parallel_for((n + kBlock - 1) / kBlock, 1, [&](int64_t b0, int64_t b1) {
    float staged[kBlock];
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t begin = b * kBlock, count = (begin + kBlock <= n ? kBlock : n - begin);
      const void* s = static_cast<const char*>(src) + size_t(begin) * src_size;
      void* d = static_cast<char*>(dst) + size_t(begin) * dst_size;
      if (dst_dtype == DType::f32) convert_to_f32(src_dtype, s, static_cast<float*>(d), size_t(count));
      else if (src_dtype == DType::f32) convert_from_f32(dst_dtype, static_cast<const float*>(s), d, size_t(count));
      else {  // bf16 ↔ f16: f32 holds either exactly, so the one rounding is the last conversion's
        convert_to_f32(src_dtype, s, staged, size_t(count));
        convert_from_f32(dst_dtype, staged, d, size_t(count));
      }
    }
  });
}

}  // namespace tach::ops
