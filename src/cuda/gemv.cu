#include "cuda/gemv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/cuda_error.h"
#include "cuda/gemv_io.cuh"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "tach/error.h"

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

// E values of x as floats: 8 (16 bytes of bf16/f16, 32 of f32) or, beside f32 weights, 4 f32.
template <ActType XT, int E>
__device__ __forceinline__ void load_x(const char* p, float* x) {
  if constexpr (E == 8) {
    load8<XT>(p, x);
  } else {
    const float4 a = *reinterpret_cast<const float4*>(p);
    x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w;
  }
}

// x[0..E) = act(gate) · up from gate|up (gate at p, up `up_bytes` further), rounded as the gate
// op writes act (gemv_io.cuh): so the products below see exactly the unfused x.
template <ActType XT, int E>
__device__ __forceinline__ void load_gated_x(const char* p, int64_t up_bytes, GemvGate gate, float* x) {
  float g[8], u[8];
  load_x<XT, E>(p, g);
  load_x<XT, E>(p + up_bytes, u);
#pragma unroll
  for (int e = 0; e < E; ++e) x[e] = gated_value<XT>(gate, g[e], u[e]);
}

// A block of kWarps warps takes kWarps / SPLIT groups of COLS adjacent output columns; each
// group's K is shared by SPLIT warps (interleaved in steps of 32 * E weights) and their sums meet
// in shared memory. SPLIT > 1 where the columns are few (decoding's 896 outputs of down, K =
// 4864): otherwise a few hundred warps each walk a long row one load at a time, and too few bytes
// are in flight to keep the memory busy. COLS > 1 issues every column's loads of a step before
// any arithmetic: more bytes in flight per warp, fewer rounds. XT is x's and y's dtype: f32 (x
// rounded to the weights' dtype), or the 16-bit weights' own (read as stored, y rounded once).
// GATED: x is gate|up and each x value act(gate) · up (load_gated_x), the activation `gate`.
template <GemvWeights WT, ActType XT, int M, int SPLIT, int COLS, bool GATED>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_kernel(void* y, const void* x, const void* W, const float* bias, int64_t N, int64_t K, int64_t ld_x,
                int64_t ld_y, bool relu, GemvGate gate) {
  using L = Weights16<WT>;
  constexpr int E = L::kCount;
  constexpr int kBytes = WT == GemvWeights::f32 ? 4 : 2;
  constexpr int kColumns = kWarps / SPLIT * COLS;  // per block and round
  __shared__ float partial[kWarps][COLS][M];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int group = warp / SPLIT, part = warp % SPLIT;
  // Every block runs the same number of rounds, so that the barrier below is reached by all.
  for (int64_t n0 = int64_t(blockIdx.x) * kColumns; n0 < N; n0 += int64_t(gridDim.x) * kColumns) {
    const int64_t first = n0 + int64_t(group) * COLS;
    float acc[COLS][M];
#pragma unroll
    for (int j = 0; j < COLS; ++j)
#pragma unroll
      for (int m = 0; m < M; ++m) acc[j][m] = 0.0f;
#pragma unroll 2
    for (int64_t k = (int64_t(part) * 32 + lane) * E; k < K; k += int64_t(32) * E * SPLIT) {
      float w[COLS][8];
#pragma unroll
      for (int j = 0; j < COLS; ++j) {
        if (first + j < N) {
          L::load(static_cast<const char*>(W) + ((first + j) * K + k) * kBytes, w[j]);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) w[j][e] = 0.0f;
        }
      }
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const char* xp = static_cast<const char*>(x) + (m * ld_x + k) * act_bytes<XT>();
        float xv[8];  // f32 weights take f32 x, 4 at a time
        if constexpr (GATED) load_gated_x<XT, E>(xp, K * act_bytes<XT>(), gate, xv);
        else load_x<XT, E>(xp, xv);
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const float xr = XT == ActType::f32 ? L::round(xv[e]) : xv[e];
#pragma unroll
          for (int j = 0; j < COLS; ++j) acc[j][m] = fmaf(xr, w[j][e], acc[j][m]);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < COLS; ++j)
#pragma unroll
      for (int m = 0; m < M; ++m) acc[j][m] = warp_sum(acc[j][m]);
    if constexpr (SPLIT > 1) {
      if (lane == 0)
#pragma unroll
        for (int j = 0; j < COLS; ++j)
#pragma unroll
          for (int m = 0; m < M; ++m) partial[warp][j][m] = acc[j][m];
      __syncthreads();
      if (part == 0)
#pragma unroll
        for (int j = 0; j < COLS; ++j)
#pragma unroll
          for (int m = 0; m < M; ++m)
            for (int p = 1; p < SPLIT; ++p) acc[j][m] += partial[warp + p][j][m];
      __syncthreads();  // partial is reused by the next round
    }
    if (lane == 0 && part == 0) {
#pragma unroll
      for (int j = 0; j < COLS; ++j) {
        const int64_t n = first + j;
        if (n >= N) break;
#pragma unroll
        for (int m = 0; m < M; ++m) {
          float v = acc[j][m];
          if (bias) v += bias[n];
          if (relu) v = fmaxf(v, 0.0f);
          store1<XT>(y, m * ld_y + n, v);
        }
      }
    }
  }
}

template <GemvWeights WT, ActType XT, int M, int SPLIT, int COLS, bool GATED>
void launch_kernel(int device, cudaStream_t s, void* y, const void* x, const void* W, const float* bias,
                   const GemvArgs& a) {
  constexpr int kColumns = kWarps / SPLIT * COLS;
  const auto kernel = gemv_kernel<WT, XT, M, SPLIT, COLS, GATED>;
  // One wave: the blocks resident at once (as many as the kernel's registers allow), each looping
  // over its columns, so that no partial second wave trails the first.
  static const int resident = [&] {
    int n = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kWarps * 32, 0) == cudaSuccess && n > 0 ? n : 1;
  }();
  const int64_t blocks = (a.N + kColumns - 1) / kColumns, wave = int64_t(resident) * multiprocessors(device);
  kernel<<<dim3(unsigned(blocks < wave ? blocks : wave)), kWarps * 32, 0, s>>>(y, x, W, bias, a.N, a.K, a.ld_x, a.ld_y,
                                                                               a.relu, a.gate);
}

template <GemvWeights WT, ActType XT, int SPLIT, int COLS, bool GATED>
void launch_rows(int device, cudaStream_t s, void* y, const void* x, const void* W, const float* bias,
                 const GemvArgs& a) {
  switch (a.M) {
    case 1: launch_kernel<WT, XT, 1, SPLIT, COLS, GATED>(device, s, y, x, W, bias, a); break;
    case 2: launch_kernel<WT, XT, 2, SPLIT, COLS, GATED>(device, s, y, x, W, bias, a); break;
    case 3: launch_kernel<WT, XT, 3, SPLIT, COLS, GATED>(device, s, y, x, W, bias, a); break;
    default: launch_kernel<WT, XT, 4, SPLIT, COLS, GATED>(device, s, y, x, W, bias, a); break;
  }
}

// The plain kernel, or the one that forms the gate as it loads x (a separate instance, so that
// the plain GEMV's code is as it was).
template <GemvWeights WT, ActType XT, int SPLIT, int COLS>
void launch_split(int device, cudaStream_t s, void* y, const void* x, const void* W, const float* bias,
                  const GemvArgs& a) {
  if (a.gate == GemvGate::none) launch_rows<WT, XT, SPLIT, COLS, false>(device, s, y, x, W, bias, a);
  else launch_rows<WT, XT, SPLIT, COLS, true>(device, s, y, x, W, bias, a);
}

template <GemvWeights WT, ActType XT, int COLS>
void launch_cols(int split, int device, cudaStream_t s, void* y, const void* x, const void* W, const float* bias,
                 const GemvArgs& a) {
  switch (split) {
    case 8: launch_split<WT, XT, 8, COLS>(device, s, y, x, W, bias, a); break;
    case 4: launch_split<WT, XT, 4, COLS>(device, s, y, x, W, bias, a); break;
    case 2: launch_split<WT, XT, 2, COLS>(device, s, y, x, W, bias, a); break;
    default: launch_split<WT, XT, 1, COLS>(device, s, y, x, W, bias, a); break;
  }
}

// Warps per column: more while the columns alone give too few warp-sized pieces of work to keep
// enough loads in flight (decoding's 896- and 1152-column linears), and while each warp keeps at
// least one 16-byte load per lane.
template <GemvWeights WT, ActType XT>
void launch(int device, cudaStream_t s, void* y, const void* x, const void* W, const float* bias, const GemvArgs& a) {
  const int64_t steps = a.K / (32 * Weights16<WT>::kCount);  // a warp's loads along one column
  int split = 1;
  while (split < 8 && a.N * split < 16384 && steps > split) split *= 2;
  // Two columns per warp for 16-bit weights, one for f32: measured on an H100 (docs/perf.md), two
  // took bf16 decoding from 1.08 to 1.03 ms per token and f32's from 1.33 to 1.38.
  if constexpr (WT == GemvWeights::f32) launch_cols<WT, XT, 1>(split, device, s, y, x, W, bias, a);
  else launch_cols<WT, XT, 2>(split, device, s, y, x, W, bias, a);
}

// The activation dtypes each weight dtype takes: f32, and a 16-bit weight's own.
bool takes_activation(GemvWeights w, DType a) {
  if (a == DType::f32) return true;
  return (w == GemvWeights::bf16 && a == DType::bf16) || (w == GemvWeights::f16 && a == DType::f16);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool gemv_fits(const GemvArgs& a, const void* x, const void* W) {
  // 16 bytes of x per load: 4 f32 values or 8 16-bit ones, so x's rows must start 16-byte aligned.
  const int64_t per16 = a.activation == DType::f32 ? 4 : 8;
  // A gate's up half starts K values after its gate, 16-byte aligned too since K % 8 == 0.
  return takes_activation(a.weights, a.activation) && a.M >= 1 && a.M <= kGemvMaxRows && a.N > 0 && a.K > 0 &&
         a.K % 8 == 0 && a.ld_x % per16 == 0 && aligned16(x) && aligned16(W) &&
         (a.gate == GemvGate::none || a.ld_x >= 2 * a.K);
}

void gemv(int device, void* y, const void* x, const void* W, const float* bias, const GemvArgs& a) {
  tach::check(takes_activation(a.weights, a.activation), "cuda gemv: " + std::string(dtype_name(a.activation)) +
                                                             " activations with these weights (f32, or the "
                                                             "weights' own 16-bit dtype)");
  cudaStream_t s = stream(device);
  const bool narrow = a.activation != DType::f32;
  switch (a.weights) {
    case GemvWeights::bf16:
      if (narrow) launch<GemvWeights::bf16, ActType::bf16>(device, s, y, x, W, bias, a);
      else launch<GemvWeights::bf16, ActType::f32>(device, s, y, x, W, bias, a);
      break;
    case GemvWeights::f16:
      if (narrow) launch<GemvWeights::f16, ActType::f16>(device, s, y, x, W, bias, a);
      else launch<GemvWeights::f16, ActType::f32>(device, s, y, x, W, bias, a);
      break;
    default: launch<GemvWeights::f32, ActType::f32>(device, s, y, x, W, bias, a); break;
  }
  check_launch("gemv_kernel");
}

}  // namespace tach::cuda
