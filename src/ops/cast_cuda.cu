// The cast on the GPU: one grid-stride pass, 8 elements per access where both pointers are
// aligned to their packs (16 bytes of bf16/f16), element by element for the rest.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/cast.h"

namespace tach::ops {
namespace {

constexpr int kPack = 8;

// dst[i] = S → f32 → D for i < n: f32 holds every bf16 and f16 exactly, so the only rounding is
// the last one. packed: the first n / 8 * 8 elements go in packs of 8.
template <typename S, typename D>
__global__ void cast_kernel(D* dst, const S* src, int64_t n, bool packed) {
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, stride = int64_t(gridDim.x) * blockDim.x;
  int64_t scalar_from = 0;
  if (packed) {
    const int64_t packs = n / kPack;
    for (int64_t p = first; p < packs; p += stride) {
      const cuda::Pack<S, kPack> in = reinterpret_cast<const cuda::Pack<S, kPack>*>(src)[p];
      cuda::Pack<D, kPack> out;
#pragma unroll
      for (int k = 0; k < kPack; ++k) out.v[k] = cuda::from_float<D>(cuda::to_float(in.v[k]));
      reinterpret_cast<cuda::Pack<D, kPack>*>(dst)[p] = out;
    }
    scalar_from = packs * kPack;
  }
  for (int64_t i = scalar_from + first; i < n; i += stride) dst[i] = cuda::from_float<D>(cuda::to_float(src[i]));
}

}  // namespace

void cast_cuda(int device, void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n) {
  if (n == 0) return;
  cudaStream_t s = cuda::stream(device);
  if (src_dtype == dst_dtype) {  // a copy, every bit kept (NaN payloads too, as the CPU's memcpy)
    cuda::check(cudaMemcpyAsync(dst, src, dtype_bytes(src_dtype, size_t(n)), cudaMemcpyDeviceToDevice, s),
                "cast (cudaMemcpyAsync)");
    return;
  }
  cuda::dispatch_activation(src_dtype, "cast", [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    cuda::dispatch_activation(dst_dtype, "cast", [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const bool packed = cuda::pack_aligned(src, sizeof(S) * kPack) && cuda::pack_aligned(dst, sizeof(D) * kPack);
      cast_kernel<S, D><<<cuda::grid_for(packed ? n / kPack + 1 : n, 256), 256, 0, s>>>(
          static_cast<D*>(dst), static_cast<const S*>(src), n, packed);
    });
  });
  cuda::check_launch("cast_kernel");
}

}  // namespace tach::ops
