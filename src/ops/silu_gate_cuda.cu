// The SwiGLU gate on the GPU: out = silu(gate) * up from one [N, 2I] GEMM output.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/silu_gate.h"

namespace tach::ops {
namespace {

__global__ void silu_gate_kernel(float* out, const float* gate_up, int64_t N, int64_t I) {
  const int64_t total = N * I;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = e / I, i = e % I;
    const float g = gate_up[n * 2 * I + i], u = gate_up[n * 2 * I + I + i];
    out[e] = g / (1.0f + expf(-g)) * u;
  }
}

}  // namespace

void silu_gate_forward_cuda(int device, float* out, const float* gate_up, int64_t N, int64_t I) {
  if (N * I == 0) return;
  silu_gate_kernel<<<cuda::grid_for(N * I, 256), 256, 0, cuda::stream(device)>>>(out, gate_up, N, I);
  cuda::check_launch("silu_gate_kernel");
}

}  // namespace tach::ops
