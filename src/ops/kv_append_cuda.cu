// The key/value cache append on the GPU: one grid-stride pass over both tensors' new rows, the
// cache length read from device memory when the call runs inside a captured decoding step.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/kv_append.h"

namespace tach::ops {
namespace {

// The arguments without the Device (a kernel takes plain values).
struct Extents {
  int64_t B, T, past, capacity, width, ld_qkv, k_col, v_col;
  const int32_t* device_past;
};

__global__ void kv_append_kernel(float* cache_k, float* cache_v, const float* qkv, Extents a) {
  const int64_t past = a.device_past ? int64_t(*a.device_past) : a.past;
  const int64_t per_tensor = a.B * a.T * a.width;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < 2 * per_tensor;
       e += int64_t(gridDim.x) * blockDim.x) {
    const bool values = e >= per_tensor;
    const int64_t f = values ? e - per_tensor : e;
    const int64_t c = f % a.width, t = (f / a.width) % a.T, b = f / (a.width * a.T);
    const float x = qkv[(b * a.T + t) * a.ld_qkv + (values ? a.v_col : a.k_col) + c];
    (values ? cache_v : cache_k)[(b * a.capacity + past + t) * a.width + c] = x;
  }
}

}  // namespace

void kv_append_cuda(int device, float* cache_k, float* cache_v, const float* qkv, const KvAppendArgs& a) {
  const int64_t total = 2 * a.B * a.T * a.width;
  const Extents e{a.B, a.T, a.past, a.capacity, a.width, a.ld_qkv, a.k_col, a.v_col, a.device_past};
  kv_append_kernel<<<cuda::grid_for(total, 256), 256, 0, cuda::stream(device)>>>(cache_k, cache_v, qkv, e);
  cuda::check_launch("kv_append_kernel");
}

}  // namespace tach::ops
