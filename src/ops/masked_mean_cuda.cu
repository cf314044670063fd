// The masked mean on the GPU, with the CPU kernels' arithmetic: each output element sums its kept
// tokens in token order in f32 and divides by the kept count (a float of whole numbers), so the
// two give the same bits. The forward reads f32, bf16 or f16 x; its output is f32.
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/masked_mean.h"

namespace tach::ops {
namespace {

constexpr int kThreads = 128;

// One thread per (b, c): blockIdx.y = b, channels across blockIdx.x.
// x: [B * T, C]  mask: [B, T]  out: [B, C], written.
// x: E elements (f32, bf16, f16), each read as f32.
template <typename E>
__global__ void masked_mean_kernel(float* out, const E* x, const int32_t* mask, int64_t T, int64_t C) {
  const int64_t b = blockIdx.y, c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int32_t* m = mask + b * T;
  float sum = 0.0f, kept = 0.0f;
  for (int64_t t = 0; t < T; ++t) {
    if (m[t] == 0) continue;
    kept += 1.0f;
    sum += cuda::to_float(x[(b * T + t) * C + c]);
  }
  out[b * C + c] = sum / kept;
}

// One block per token row (blockIdx.x = t, blockIdx.y = b): the row's kept count summed over the
// block, then dx[b * T + t] += dout[b] / count where the mask keeps t.
// dout: [B, C]  mask: [B, T]  dx: [B * T, C] +=
__global__ void masked_mean_backward_kernel(float* dx, const float* dout, const int32_t* mask, int64_t T, int64_t C) {
  __shared__ float scratch[32];
  const int64_t t = blockIdx.x, b = blockIdx.y;
  const int32_t* m = mask + b * T;
  if (m[t] == 0) return;  // block-uniform: the whole block leaves before the reduction
  float kept = 0.0f;
  for (int64_t j = threadIdx.x; j < T; j += blockDim.x) kept += m[j] != 0 ? 1.0f : 0.0f;
  kept = cuda::block_sum(kept, scratch);
  const float* d = dout + b * C;
  float* row = dx + (b * T + t) * C;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) row[c] += d[c] / kept;
}

}  // namespace

void masked_mean_forward_cuda(int device, float* out, const void* x, DType x_dtype, const int32_t* mask, int64_t B,
                              int64_t T, int64_t C) {
  if (B * C == 0) return;
  const dim3 grid(static_cast<unsigned>((C + kThreads - 1) / kThreads), static_cast<unsigned>(B));
  cuda::dispatch_activation(x_dtype, "masked_mean", [&](auto tag) {
    using E = typename decltype(tag)::type;
    masked_mean_kernel<<<grid, kThreads, 0, cuda::stream(device)>>>(out, static_cast<const E*>(x), mask, T, C);
  });
  cuda::check_launch("masked_mean_kernel");
}

void masked_mean_forward_cuda(int device, float* out, const float* x, const int32_t* mask, int64_t B, int64_t T,
                              int64_t C) {
  masked_mean_forward_cuda(device, out, static_cast<const void*>(x), DType::f32, mask, B, T, C);
}

void masked_mean_backward_cuda(int device, float* dx, const float* dout, const int32_t* mask, int64_t B, int64_t T,
                               int64_t C) {
  if (B * T * C == 0) return;
  const dim3 grid(static_cast<unsigned>(T), static_cast<unsigned>(B));
  masked_mean_backward_kernel<<<grid, kThreads, 0, cuda::stream(device)>>>(dx, dout, mask, T, C);
  cuda::check_launch("masked_mean_backward_kernel");
}

}  // namespace tach::ops
