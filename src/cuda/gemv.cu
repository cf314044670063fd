#include "cuda/gemv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"

namespace tach::cuda {
namespace {

constexpr int kWarps = 8;  // per block; each warp owns output columns n = block * kWarps + warp

// 16 bytes of weights as floats: 8 bf16/f16 or 4 f32 (the tail of `w` unused for f32).
template <GemvWeights WT>
struct Weights16 {
  static constexpr int kCount = WT == GemvWeights::f32 ? 4 : 8;
  __device__ static void load(const void* p, float* w) {
    const uint4 raw = __ldg(static_cast<const uint4*>(p));
    if constexpr (WT == GemvWeights::f32) {
      w[0] = __uint_as_float(raw.x), w[1] = __uint_as_float(raw.y), w[2] = __uint_as_float(raw.z),
      w[3] = __uint_as_float(raw.w);
    } else {
      const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (WT == GemvWeights::bf16) {
          const __nv_bfloat162 pair = *reinterpret_cast<const __nv_bfloat162*>(&words[i]);
          const float2 f = __bfloat1622float2(pair);
          w[2 * i] = f.x, w[2 * i + 1] = f.y;
        } else {
          const __half2 pair = *reinterpret_cast<const __half2*>(&words[i]);
          const float2 f = __half22float2(pair);
          w[2 * i] = f.x, w[2 * i + 1] = f.y;
        }
      }
    }
  }
  // x as the GEMM path sees it: rounded to the weights' dtype.
  __device__ static float round(float x) {
    if constexpr (WT == GemvWeights::bf16) return __bfloat162float(__float2bfloat16_rn(x));
    else if constexpr (WT == GemvWeights::f16) return __half2float(__float2half_rn(x));
    else return x;
  }
};

// A block of kWarps warps takes kWarps / SPLIT output columns; each column's K is shared by SPLIT
// warps (interleaved in steps of 32 * E weights) and their sums meet in shared memory. SPLIT > 1
// where the columns are few (decoding's 896 outputs of down, K = 4864): otherwise a few hundred
// warps each walk a long row one load at a time, and too few bytes are in flight to keep the
// memory busy.
template <GemvWeights WT, int M, int SPLIT>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_kernel(float* y, const float* x, const void* W, const float* bias, int64_t N, int64_t K, int64_t ld_x,
                int64_t ld_y, bool relu) {
  using L = Weights16<WT>;
  constexpr int E = L::kCount;
  constexpr int kBytes = WT == GemvWeights::f32 ? 4 : 2;
  constexpr int kColumns = kWarps / SPLIT;
  __shared__ float partial[kWarps][M];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int column = warp / SPLIT, part = warp % SPLIT;
  // Every block runs the same number of rounds, so that the barrier below is reached by all.
  for (int64_t n0 = int64_t(blockIdx.x) * kColumns; n0 < N; n0 += int64_t(gridDim.x) * kColumns) {
    const int64_t n = n0 + column;
    float acc[M];
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = 0.0f;
    if (n < N) {
      const char* row = static_cast<const char*>(W) + n * K * kBytes;
#pragma unroll 2
      for (int64_t k = (int64_t(part) * 32 + lane) * E; k < K; k += int64_t(32) * E * SPLIT) {
        float w[8];
        L::load(row + k * kBytes, w);
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const float4* xp = reinterpret_cast<const float4*>(x + m * ld_x + k);
          float xv[8];
          const float4 a = xp[0];
          xv[0] = a.x, xv[1] = a.y, xv[2] = a.z, xv[3] = a.w;
          if constexpr (E == 8) {
            const float4 b = xp[1];
            xv[4] = b.x, xv[5] = b.y, xv[6] = b.z, xv[7] = b.w;
          }
#pragma unroll
          for (int e = 0; e < E; ++e) acc[m] = fmaf(L::round(xv[e]), w[e], acc[m]);
        }
      }
    }
#pragma unroll
    for (int m = 0; m < M; ++m) acc[m] = warp_sum(acc[m]);
    if constexpr (SPLIT > 1) {
      if (lane == 0)
#pragma unroll
        for (int m = 0; m < M; ++m) partial[warp][m] = acc[m];
      __syncthreads();
      if (part == 0)
#pragma unroll
        for (int m = 0; m < M; ++m)
          for (int p = 1; p < SPLIT; ++p) acc[m] += partial[warp + p][m];
      __syncthreads();  // partial is reused by the next round
    }
    if (lane == 0 && part == 0 && n < N) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float v = acc[m];
        if (bias) v += bias[n];
        if (relu) v = fmaxf(v, 0.0f);
        y[m * ld_y + n] = v;
      }
    }
  }
}

int multiprocessors(int device) {
  static int count[16] = {};
  if (device < 0 || device >= 16) return 1;
  if (count[device] == 0 &&
      cudaDeviceGetAttribute(&count[device], cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    count[device] = 1;
  return count[device];
}

// At most one wave of blocks (8 per multiprocessor: 2048 threads), each looping over its columns,
// so that no second, mostly empty wave trails the first.
template <GemvWeights WT, int SPLIT>
void launch_split(int device, cudaStream_t s, float* y, const float* x, const void* W, const float* bias,
                  const GemvArgs& a) {
  constexpr int kColumns = kWarps / SPLIT;
  const int64_t blocks = (a.N + kColumns - 1) / kColumns, wave = int64_t(8) * multiprocessors(device);
  const dim3 grid(unsigned(blocks < wave ? blocks : wave));
  const int threads = kWarps * 32;
  switch (a.M) {
    case 1: gemv_kernel<WT, 1, SPLIT><<<grid, threads, 0, s>>>(y, x, W, bias, a.N, a.K, a.ld_x, a.ld_y, a.relu); break;
    case 2: gemv_kernel<WT, 2, SPLIT><<<grid, threads, 0, s>>>(y, x, W, bias, a.N, a.K, a.ld_x, a.ld_y, a.relu); break;
    case 3: gemv_kernel<WT, 3, SPLIT><<<grid, threads, 0, s>>>(y, x, W, bias, a.N, a.K, a.ld_x, a.ld_y, a.relu); break;
    default: gemv_kernel<WT, 4, SPLIT><<<grid, threads, 0, s>>>(y, x, W, bias, a.N, a.K, a.ld_x, a.ld_y, a.relu); break;
  }
}

// Warps per column: more while the columns alone give too few warp-sized pieces of work to keep
// enough loads in flight (decoding's 896- and 1152-column linears), and while each warp keeps at
// least one 16-byte load per lane.
template <GemvWeights WT>
void launch(int device, cudaStream_t s, float* y, const float* x, const void* W, const float* bias, const GemvArgs& a) {
  const int64_t steps = a.K / (32 * Weights16<WT>::kCount);  // a warp's loads along one column
  int split = 1;
  while (split < 8 && a.N * split < 16384 && steps > split) split *= 2;
  switch (split) {
    case 8: launch_split<WT, 8>(device, s, y, x, W, bias, a); break;
    case 4: launch_split<WT, 4>(device, s, y, x, W, bias, a); break;
    case 2: launch_split<WT, 2>(device, s, y, x, W, bias, a); break;
    default: launch_split<WT, 1>(device, s, y, x, W, bias, a); break;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool gemv_fits(const GemvArgs& a, const void* x, const void* W) {
  return a.M >= 1 && a.M <= kGemvMaxRows && a.N > 0 && a.K > 0 && a.K % 8 == 0 && a.ld_x % 4 == 0 && aligned16(x) &&
         aligned16(W);
}

void gemv(int device, float* y, const float* x, const void* W, const float* bias, const GemvArgs& a) {
  cudaStream_t s = stream(device);
  switch (a.weights) {
    case GemvWeights::bf16: launch<GemvWeights::bf16>(device, s, y, x, W, bias, a); break;
    case GemvWeights::f16: launch<GemvWeights::f16>(device, s, y, x, W, bias, a); break;
    default: launch<GemvWeights::f32>(device, s, y, x, W, bias, a); break;
  }
  check_launch("gemv_kernel");
}

}  // namespace tach::cuda
