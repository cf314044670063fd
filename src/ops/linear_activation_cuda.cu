// The inference linear's activations that run after its GEMM or GEMV, in place: erf-GELU and
// tanh on a bf16/f16 output (the f32 ones keep ops/gelu_cuda.cu and ops/activation_cuda.cu's
// kernels), and tanh-GELU after the GEMV in any dtype (the GEMM applies it in cuBLASLt's
// epilogue). Each value loaded, computed in f32 (cuda/activation_math.cuh's formulas, the
// training kernels' and the CPU's), rounded once; 16 bytes per thread where every row starts
// 16-byte aligned and holds whole 16-byte groups, else one value per thread.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "cuda/activation_math.cuh"
#include "cuda/cuda_error.h"
#include "cuda/gemv_io.cuh"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/linear.h"
#include "tach/error.h"

namespace tach::ops {

namespace {

using cuda::ActType;

enum class Fn { gelu_erf, tanh, gelu_tanh };

template <Fn F>
__device__ __forceinline__ float activate(float v) {
  if constexpr (F == Fn::gelu_erf) return cuda::gelu_erf(v);
  else if constexpr (F == Fn::gelu_tanh) return cuda::gelu_tanh(v);
  else return tanhf(v);
}

template <ActType A>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  if constexpr (A == ActType::bf16) {
    const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&p);
  } else {
    const __half2 p = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&p);
  }
}

// y: [M, N] (row stride ld), N and ld multiples of kPer16 (values in 16 bytes): one 16-byte
// group per thread of a grid-stride loop.
template <ActType A, Fn F>
__global__ void activation_vec_kernel(void* y, int64_t M, int64_t N, int64_t ld) {
  constexpr int kPer16 = 16 / cuda::act_bytes<A>();
  const int64_t groups_per_row = N / kPer16, groups = M * groups_per_row;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = g / groups_per_row, n = (g % groups_per_row) * kPer16;
    char* p = static_cast<char*>(y) + (m * ld + n) * cuda::act_bytes<A>();
    if constexpr (A == ActType::f32) {
      float4 v = *reinterpret_cast<float4*>(p);
      v.x = activate<F>(v.x), v.y = activate<F>(v.y), v.z = activate<F>(v.z), v.w = activate<F>(v.w);
      *reinterpret_cast<float4*>(p) = v;
    } else {
      float v[8];
      cuda::load8<A>(p, v);
      uint4 out;
      out.x = pack_pair<A>(activate<F>(v[0]), activate<F>(v[1]));
      out.y = pack_pair<A>(activate<F>(v[2]), activate<F>(v[3]));
      out.z = pack_pair<A>(activate<F>(v[4]), activate<F>(v[5]));
      out.w = pack_pair<A>(activate<F>(v[6]), activate<F>(v[7]));
      *reinterpret_cast<uint4*>(p) = out;
    }
  }
}

template <ActType A>
__device__ __forceinline__ float load1(const void* y, int64_t i) {
  if constexpr (A == ActType::f32) return static_cast<const float*>(y)[i];
  else if constexpr (A == ActType::bf16) return __bfloat162float(static_cast<const __nv_bfloat16*>(y)[i]);
  else return __half2float(static_cast<const __half*>(y)[i]);
}

template <ActType A, Fn F>
__global__ void activation_scalar_kernel(void* y, int64_t M, int64_t N, int64_t ld) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < M * N; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = (i / N) * ld + i % N;
    cuda::store1<A>(y, at, activate<F>(load1<A>(y, at)));
  }
}

template <ActType A, Fn F>
void launch(int device, void* y, int64_t M, int64_t N, int64_t ld) {
  constexpr int kPer16 = 16 / cuda::act_bytes<A>();
  cudaStream_t s = cuda::stream(device);
  const bool vec = N % kPer16 == 0 && ld % kPer16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  if (vec) activation_vec_kernel<A, F><<<cuda::grid_for(M * N / kPer16, 256), 256, 0, s>>>(y, M, N, ld);
  else activation_scalar_kernel<A, F><<<cuda::grid_for(M * N, 256), 256, 0, s>>>(y, M, N, ld);
  cuda::check_launch("linear_activation_kernel");
}

template <ActType A>
void launch_activation(int device, void* y, int64_t M, int64_t N, int64_t ld, cpu::FusedActivation activation) {
  switch (activation) {
    case cpu::FusedActivation::gelu_erf: launch<A, Fn::gelu_erf>(device, y, M, N, ld); break;
    case cpu::FusedActivation::gelu_tanh: launch<A, Fn::gelu_tanh>(device, y, M, N, ld); break;
    default: launch<A, Fn::tanh>(device, y, M, N, ld); break;
  }
}

}  // namespace

void linear_activation_cuda(int device, void* y, DType dtype, int64_t M, int64_t N, int64_t ld,
                            cpu::FusedActivation activation) {
  check(activation == cpu::FusedActivation::gelu_erf || activation == cpu::FusedActivation::tanh ||
            activation == cpu::FusedActivation::gelu_tanh,
        "linear_activation_cuda: only erf-GELU, tanh and tanh-GELU run after the GEMM (ReLU is its epilogue)");
  check(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
        "linear_activation_cuda: y in " + std::string(dtype_name(dtype)) + "; this kernel takes f32, bf16 or f16");
  if (M * N == 0) return;
  if (dtype == DType::bf16) launch_activation<ActType::bf16>(device, y, M, N, ld, activation);
  else if (dtype == DType::f16) launch_activation<ActType::f16>(device, y, M, N, ld, activation);
  else launch_activation<ActType::f32>(device, y, M, N, ld, activation);
}

}  // namespace tach::ops
