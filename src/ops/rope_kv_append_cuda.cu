// Decoding's RoPE and cache append in one kernel (f32, bf16 or f16): each thread rotates one
// (x[i], x[i + D/2]) pair of a query or key head exactly as rope_kernel does (f32 arithmetic, each
// half rounded once) and stores it back; a key pair also goes to the cache; the values are copied
// to the cache as they are. The cache length is read on the device inside a captured step.
#include <cstdint>

#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/rope_kv_append.h"

namespace tach::ops {
namespace {

struct Extents {
  int64_t B, T, past, capacity, width, ld_qkv, v_col;
  int64_t q_heads, kv_heads, D;
  const int32_t* device_past;
};

template <typename T>
__global__ void rope_kv_append_kernel(T* qkv, T* cache_k, T* cache_v, const float* cos_table, const float* sin_table,
                                      Extents a) {
  const int64_t past = a.device_past ? int64_t(*a.device_past) : a.past;
  const int64_t half = a.D / 2, pairs = (a.q_heads + a.kv_heads) * half;
  const int64_t per_row = pairs + a.width, total = a.B * a.T * per_row;  // the rotations, then the values
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = e / per_row, r = e % per_row;  // n = b·T + t
    const int64_t b = n / a.T, t = n % a.T;
    T* row = qkv + n * a.ld_qkv;
    const int64_t cache_row = (b * a.capacity + past + t) * a.width;
    if (r >= pairs) {  // a value, copied as it is
      const int64_t c = r - pairs;
      cache_v[cache_row + c] = row[a.v_col + c];
      continue;
    }
    const int64_t head = r / half, i = r % half;
    const float c = cos_table[n * half + i], s = sin_table[n * half + i];
    T* p = row + head * a.D;  // the keys' heads follow the queries' (k_col = q_heads · D)
    const float x0 = cuda::to_float(p[i]), x1 = cuda::to_float(p[i + half]);
    const T y0 = cuda::from_float<T>(x0 * c - x1 * s), y1 = cuda::from_float<T>(x1 * c + x0 * s);
    p[i] = y0;
    p[i + half] = y1;
    if (head >= a.q_heads) {
      T* k = cache_k + cache_row + (head - a.q_heads) * a.D;
      k[i] = y0;
      k[i + half] = y1;
    }
  }
}

}  // namespace

void rope_kv_append_cuda(int device, void* qkv, void* cache_k, void* cache_v, const KvAppendArgs& a, int64_t q_heads,
                         int64_t D, const float* cos_table, const float* sin_table) {
  const Extents e{a.B, a.T, a.past, a.capacity, a.width, a.ld_qkv, a.v_col, q_heads, a.width / D, D, a.device_past};
  const int64_t total = a.B * a.T * ((q_heads + e.kv_heads) * (D / 2) + a.width);
  if (total == 0) return;
  cuda::dispatch_activation(a.dtype, "rope_kv_append", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rope_kv_append_kernel<T><<<cuda::grid_for(total, 256), 256, 0, cuda::stream(device)>>>(
        static_cast<T*>(qkv), static_cast<T*>(cache_k), static_cast<T*>(cache_v), cos_table, sin_table, e);
  });
  cuda::check_launch("rope_kv_append_kernel");
}

}  // namespace tach::ops
