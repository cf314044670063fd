// Embedding lookup on the GPU: out[n, :] (+)= table[ids[n], :], the table in its stored dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/embedding.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

__device__ __forceinline__ float load_as_float(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_as_float(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load_as_float(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }

// An id outside [0, V) reads nothing and yields zeros: the ids were checked on the host before
// they were copied (model::check_batch), and a kernel must not read out of bounds regardless.
template <typename T>
__global__ void embedding_kernel(float* out, const int32_t* ids, const T* table, int64_t N, int64_t C, int64_t V,
                                 bool accumulate) {
  const int64_t total = N * C;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i / C, c = i % C;
    const int32_t id = ids[n];
    const float v = (id >= 0 && id < V) ? load_as_float(table, int64_t(id) * C + c) : 0.0f;
    out[i] = accumulate ? out[i] + v : v;
  }
}

}  // namespace

void embedding_forward_cuda(int device, float* out, const int32_t* ids, const void* table, DType table_dtype, int64_t N,
                            int64_t C, int64_t V, bool accumulate) {
  if (N * C == 0) return;
  const unsigned grid = cuda::grid_for(N * C, 256);
  cudaStream_t s = cuda::stream(device);
  switch (table_dtype) {
    case DType::f32:
      embedding_kernel<<<grid, 256, 0, s>>>(out, ids, static_cast<const float*>(table), N, C, V, accumulate);
      break;
    case DType::f16:
      embedding_kernel<<<grid, 256, 0, s>>>(out, ids, static_cast<const __half*>(table), N, C, V, accumulate);
      break;
    case DType::bf16:
      embedding_kernel<<<grid, 256, 0, s>>>(out, ids, static_cast<const __nv_bfloat16*>(table), N, C, V, accumulate);
      break;
    default: throw Error("embedding on CUDA: no kernel for a " + std::string(dtype_name(table_dtype)) + " table");
  }
  cuda::check_launch("embedding_kernel");
}

}  // namespace tach::ops
