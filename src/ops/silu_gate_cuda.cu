// The gated MLP activations on the GPU: out = act(gate) * up from one [N, 2I] GEMM output (f32,
// bf16 or f16 activations, f32 arithmetic), with
// act SiLU (Llama, Qwen), tanh-GELU (Gemma) or erf-GELU (ModernBERT's GeGLU), as on the CPU;
// and their backward into both halves of d_gate_up.
#include "cuda/activation_math.cuh"
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/silu_gate.h"

namespace tach::ops {
namespace {

// Each activation's value and derivative at the gate g.
struct Silu {
  __device__ float operator()(float g) const { return cuda::silu(g); }
  __device__ float grad(float g) const {
    const float s = cuda::sigmoid(g);
    return s * (1.0f + g * (1.0f - s));
  }
};
struct GeluTanh {
  __device__ float operator()(float x) const { return cuda::gelu_tanh(x); }
  __device__ float grad(float x) const { return cuda::gelu_tanh_grad(x); }
};
struct GeluErf {
  __device__ float operator()(float x) const { return cuda::gelu_erf(x); }
  __device__ float grad(float x) const { return cuda::gelu_erf_grad(x); }
};

// out = act(gate) * up in f32 from T elements, rounded once to T.
template <typename Act, typename T>
__global__ void gate_kernel(T* out, const T* gate_up, int64_t N, int64_t I) {
  const int64_t total = N * I;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = e / I, i = e % I;
    out[e] =
        cuda::from_float<T>(Act{}(cuda::to_float(gate_up[n * 2 * I + i])) * cuda::to_float(gate_up[n * 2 * I + I + i]));
  }
}

// d_gate = dout * up * act'(gate), d_up = dout * act(gate); both written.
template <typename Act>
__global__ void gate_backward_kernel(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I) {
  const int64_t total = N * I;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t gate = (e / I) * 2 * I + e % I, up = gate + I;
    const float g = gate_up[gate], u = gate_up[up], dy = dout[e];
    d_gate_up[up] = dy * Act{}(g);
    d_gate_up[gate] = dy * u * Act{}.grad(g);
  }
}

}  // namespace

void gate_forward_cuda(int device, GateActivation act, DType dtype, void* out, const void* gate_up, int64_t N,
                       int64_t I) {
  if (N * I == 0) return;
  const unsigned grid = cuda::grid_for(N * I, 256);
  cudaStream_t s = cuda::stream(device);
  cuda::dispatch_activation(dtype, gate_op_name(act), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = static_cast<T*>(out);
    const T* g = static_cast<const T*>(gate_up);
    switch (act) {
      case GateActivation::silu: gate_kernel<Silu><<<grid, 256, 0, s>>>(o, g, N, I); break;
      case GateActivation::gelu_tanh: gate_kernel<GeluTanh><<<grid, 256, 0, s>>>(o, g, N, I); break;
      case GateActivation::gelu: gate_kernel<GeluErf><<<grid, 256, 0, s>>>(o, g, N, I); break;
    }
  });
  cuda::check_launch("gate_kernel");
}

void gate_forward_cuda(int device, GateActivation act, float* out, const float* gate_up, int64_t N, int64_t I) {
  gate_forward_cuda(device, act, DType::f32, out, gate_up, N, I);
}

void gate_backward_cuda(int device, GateActivation act, float* d_gate_up, const float* gate_up, const float* dout,
                        int64_t N, int64_t I) {
  if (N * I == 0) return;
  const unsigned grid = cuda::grid_for(N * I, 256);
  cudaStream_t s = cuda::stream(device);
  switch (act) {
    case GateActivation::silu: gate_backward_kernel<Silu><<<grid, 256, 0, s>>>(d_gate_up, gate_up, dout, N, I); break;
    case GateActivation::gelu_tanh:
      gate_backward_kernel<GeluTanh><<<grid, 256, 0, s>>>(d_gate_up, gate_up, dout, N, I);
      break;
    case GateActivation::gelu:
      gate_backward_kernel<GeluErf><<<grid, 256, 0, s>>>(d_gate_up, gate_up, dout, N, I);
      break;
  }
  cuda::check_launch("gate_backward_kernel");
}

}  // namespace tach::ops
