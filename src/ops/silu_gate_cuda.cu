// The gated MLP activations on the GPU: out = act(gate) * up from one [N, 2I] GEMM output, with
// act SiLU (Llama, Qwen), tanh-GELU (Gemma) or erf-GELU (ModernBERT's GeGLU), as on the CPU.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/silu_gate.h"

namespace tach::ops {
namespace {

struct Silu {
  __device__ float operator()(float g) const { return g / (1.0f + expf(-g)); }
};
struct GeluTanh {
  __device__ float operator()(float x) const {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
};
struct GeluErf {
  __device__ float operator()(float x) const { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
};

template <typename Act>
__global__ void gate_kernel(float* out, const float* gate_up, int64_t N, int64_t I) {
  const int64_t total = N * I;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = e / I, i = e % I;
    out[e] = Act{}(gate_up[n * 2 * I + i]) * gate_up[n * 2 * I + I + i];
  }
}

}  // namespace

void gate_forward_cuda(int device, GateActivation act, float* out, const float* gate_up, int64_t N, int64_t I) {
  if (N * I == 0) return;
  const unsigned grid = cuda::grid_for(N * I, 256);
  cudaStream_t s = cuda::stream(device);
  switch (act) {
    case GateActivation::silu: gate_kernel<Silu><<<grid, 256, 0, s>>>(out, gate_up, N, I); break;
    case GateActivation::gelu_tanh: gate_kernel<GeluTanh><<<grid, 256, 0, s>>>(out, gate_up, N, I); break;
    case GateActivation::gelu: gate_kernel<GeluErf><<<grid, 256, 0, s>>>(out, gate_up, N, I); break;
  }
  cuda::check_launch("gate_kernel");
}

}  // namespace tach::ops
