// The key/value cache append on the GPU (f32, bf16 or f16 rows, moved without conversion): one
// grid-stride pass over both tensors' new rows, the cache length read from device memory when the
// call runs inside a captured decoding step.
#include <cstdint>
#include <string>

#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/kv_append.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

// The arguments without the Device (a kernel takes plain values).
struct Extents {
  int64_t B, T, past, capacity, width, ld_qkv, k_col, v_col;
  const int32_t* device_past;
};

// E: an unsigned integer of the element's size (the rows are moved, not converted).
template <typename E>
__global__ void kv_append_kernel(E* cache_k, E* cache_v, const E* qkv, Extents a) {
  const int64_t past = a.device_past ? int64_t(*a.device_past) : a.past;
  const int64_t per_tensor = a.B * a.T * a.width;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < 2 * per_tensor;
       e += int64_t(gridDim.x) * blockDim.x) {
    const bool values = e >= per_tensor;
    const int64_t f = values ? e - per_tensor : e;
    const int64_t c = f % a.width, t = (f / a.width) % a.T, b = f / (a.width * a.T);
    const E x = qkv[(b * a.T + t) * a.ld_qkv + (values ? a.v_col : a.k_col) + c];
    (values ? cache_v : cache_k)[(b * a.capacity + past + t) * a.width + c] = x;
  }
}

}  // namespace

void kv_append_cuda(int device, void* cache_k, void* cache_v, const void* qkv, const KvAppendArgs& a) {
  const int64_t total = 2 * a.B * a.T * a.width;
  const Extents e{a.B, a.T, a.past, a.capacity, a.width, a.ld_qkv, a.k_col, a.v_col, a.device_past};
  const unsigned grid = cuda::grid_for(total, 256);
  cudaStream_t s = cuda::stream(device);
  switch (dtype_bits(a.dtype)) {
    case 32:
      kv_append_kernel<<<grid, 256, 0, s>>>(static_cast<uint32_t*>(cache_k), static_cast<uint32_t*>(cache_v),
                                            static_cast<const uint32_t*>(qkv), e);
      break;
    case 16:
      kv_append_kernel<<<grid, 256, 0, s>>>(static_cast<uint16_t*>(cache_k), static_cast<uint16_t*>(cache_v),
                                            static_cast<const uint16_t*>(qkv), e);
      break;
    default: throw Error("kv_append on CUDA: no kernel for a " + std::string(dtype_name(a.dtype)) + " cache");
  }
  cuda::check_launch("kv_append_kernel");
}

}  // namespace tach::ops
