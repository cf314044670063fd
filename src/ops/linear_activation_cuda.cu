// The inference linear's erf-GELU and tanh on a bf16/f16 output, in place after the GEMM or GEMV:
// each element loaded, computed in f32 (cuda/activation_math.cuh's formulas, the training
// kernels' and the CPU's), rounded once. 16 bytes (8 values) per thread where every row starts
// 16-byte aligned and holds whole groups of 8; else one value per thread. (The f32 outputs keep
// ops/gelu_cuda.cu and ops/activation_cuda.cu's kernels.)
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

template <bool kGelu>
__device__ __forceinline__ float activate(float v) {
  if constexpr (kGelu) return cuda::gelu_erf(v);
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

// y: [M, N] (row stride ld), N and ld multiples of 8: groups of 8 values, N / 8 per row.
template <ActType A, bool kGelu>
__global__ void activation_vec8_kernel(void* y, int64_t M, int64_t N, int64_t ld) {
  const int64_t groups_per_row = N / 8, groups = M * groups_per_row;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = g / groups_per_row, n = (g % groups_per_row) * 8;
    uint4* p = reinterpret_cast<uint4*>(static_cast<char*>(y) + (m * ld + n) * 2);
    float v[8];
    cuda::load8<A>(p, v);
    uint4 out;
    out.x = pack_pair<A>(activate<kGelu>(v[0]), activate<kGelu>(v[1]));
    out.y = pack_pair<A>(activate<kGelu>(v[2]), activate<kGelu>(v[3]));
    out.z = pack_pair<A>(activate<kGelu>(v[4]), activate<kGelu>(v[5]));
    out.w = pack_pair<A>(activate<kGelu>(v[6]), activate<kGelu>(v[7]));
    *p = out;
  }
}

template <ActType A>
__device__ __forceinline__ float load1(const void* y, int64_t i) {
  if constexpr (A == ActType::bf16) return __bfloat162float(static_cast<const __nv_bfloat16*>(y)[i]);
  else return __half2float(static_cast<const __half*>(y)[i]);
}

template <ActType A, bool kGelu>
__global__ void activation_scalar_kernel(void* y, int64_t M, int64_t N, int64_t ld) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < M * N; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t at = (i / N) * ld + i % N;
    cuda::store1<A>(y, at, activate<kGelu>(load1<A>(y, at)));
  }
}

template <ActType A, bool kGelu>
void launch(int device, void* y, int64_t M, int64_t N, int64_t ld) {
  cudaStream_t s = cuda::stream(device);
  const bool vec = N % 8 == 0 && ld % 8 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  if (vec) activation_vec8_kernel<A, kGelu><<<cuda::grid_for(M * N / 8, 256), 256, 0, s>>>(y, M, N, ld);
  else activation_scalar_kernel<A, kGelu><<<cuda::grid_for(M * N, 256), 256, 0, s>>>(y, M, N, ld);
  cuda::check_launch("linear_activation_kernel");
}

template <ActType A>
void launch_activation(int device, void* y, int64_t M, int64_t N, int64_t ld, cpu::FusedActivation activation) {
  if (activation == cpu::FusedActivation::gelu_erf) launch<A, true>(device, y, M, N, ld);
  else launch<A, false>(device, y, M, N, ld);
}

}  // namespace

void linear_activation_cuda(int device, void* y, DType dtype, int64_t M, int64_t N, int64_t ld,
                            cpu::FusedActivation activation) {
  check(activation == cpu::FusedActivation::gelu_erf || activation == cpu::FusedActivation::tanh,
        "linear_activation_cuda: only erf-GELU and tanh run after the GEMM (ReLU is its epilogue)");
  check(dtype == DType::bf16 || dtype == DType::f16,
        "linear_activation_cuda: y in " + std::string(dtype_name(dtype)) + "; this kernel takes bf16 or f16");
  if (M * N == 0) return;
  if (dtype == DType::bf16) launch_activation<ActType::bf16>(device, y, M, N, ld, activation);
  else launch_activation<ActType::f16>(device, y, M, N, ld, activation);
}

}  // namespace tach::ops
