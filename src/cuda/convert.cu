#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "cuda/convert.h"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "tach/error.h"

namespace tach::cuda {
namespace {

__device__ __forceinline__ void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void store(__half* p, float v) { *p = __float2half_rn(v); }

template <typename T>
__global__ void convert_kernel(T* dst, const float* src, int64_t rows, int64_t cols, int64_t ld_src) {
  const int64_t total = rows * cols;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x)
    store(dst + e, src[(e / cols) * ld_src + e % cols]);
}

}  // namespace

void convert_from_f32(int device, void* dst, DType dst_dtype, const float* src, int64_t rows, int64_t cols,
                      int64_t ld_src) {
  const int64_t total = rows * cols;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  const unsigned grid = grid_for(total, 256);
  switch (dst_dtype) {
    case DType::bf16:
      convert_kernel<<<grid, 256, 0, s>>>(static_cast<__nv_bfloat16*>(dst), src, rows, cols, ld_src);
      break;
    case DType::f16: convert_kernel<<<grid, 256, 0, s>>>(static_cast<__half*>(dst), src, rows, cols, ld_src); break;
    default: throw Error("convert_from_f32 on CUDA: no conversion to " + std::string(dtype_name(dst_dtype)));
  }
  check_launch("convert_kernel");
}

}  // namespace tach::cuda
