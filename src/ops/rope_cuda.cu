// Rotary position embeddings on the GPU, in place (f32, bf16 or f16), with transformers'
// rotate_half pairing: (x[i], x[i + D/2]) rotated by the angle whose cos/sin the table holds for
// the row.
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/rope.h"

namespace tach::ops {
namespace {

// x: T elements (f32, bf16, f16); the pair read, rotated in f32 and each half rounded once.
template <typename T>
__global__ void rope_kernel(T* x, const float* cos_table, const float* sin_table, int64_t N, int64_t heads, int64_t D,
                            int64_t ld, float direction) {
  const int64_t half = D / 2, total = N * heads * half;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e % half, head = (e / half) % heads, n = e / (half * heads);
    const float c = cos_table[n * half + i], s = direction * sin_table[n * half + i];
    T* p = x + n * ld + head * D;
    const float a = cuda::to_float(p[i]), b = cuda::to_float(p[i + half]);
    p[i] = cuda::from_float<T>(a * c - b * s);
    p[i + half] = cuda::from_float<T>(b * c + a * s);
  }
}

}  // namespace

void rope_rotate_cuda(int device, DType dtype, void* x, int64_t N, int64_t heads, int64_t D, int64_t ld,
                      const float* cos_table, const float* sin_table, bool inverse) {
  const int64_t total = N * heads * (D / 2);
  if (total == 0) return;
  cuda::dispatch_activation(dtype, "rope", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rope_kernel<T><<<cuda::grid_for(total, 256), 256, 0, cuda::stream(device)>>>(
        static_cast<T*>(x), cos_table, sin_table, N, heads, D, ld, inverse ? -1.0f : 1.0f);
  });
  cuda::check_launch("rope_kernel");
}

void rope_rotate_cuda(int device, float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const float* cos_table,
                      const float* sin_table, bool inverse) {
  rope_rotate_cuda(device, DType::f32, x, N, heads, D, ld, cos_table, sin_table, inverse);
}

}  // namespace tach::ops
