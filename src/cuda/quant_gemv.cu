#include "cuda/quant_gemv.h"

#include <cuda_bf16.h>

#include <string>

#include "cpu/nf4.h"
#include "cuda/cuda_error.h"
#include "cuda/gemv.h"
#include "cuda/gemv_io.cuh"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "tach/error.h"

namespace tach::cuda {
namespace {

constexpr int kWarps = 8;  // per block, as cuda/gemv.cu
constexpr int kCols = 2;   // output columns per warp: each x load serves both (as gemv.cu's 16-bit weights)

// The 16 NF4 values, passed by value and copied into shared memory: a lookup per code from
// registers would need a 16-way select, and one from constant memory serialises when the lanes'
// codes differ; shared memory serves 16 distinct floats to a warp in one pass (distinct banks).
struct CodeBook {
  float v[16];
};

CodeBook nf4_book() {
  CodeBook b;
  for (int i = 0; i < 16; ++i) b.v[i] = cpu::nf4_code_book()[i];
  return b;
}

template <QuantWeights QW>
struct Packing {
  static constexpr int kPerLoad = QW == QuantWeights::int8 ? 16 : 32;  // weights in 16 bytes of codes
  static constexpr int kChunks = kPerLoad / 8;                         // 8 weights (one x load) at a time
};

__device__ __forceinline__ uint32_t word_of(const uint4& r, int i) {
  return i == 0 ? r.x : i == 1 ? r.y : i == 2 ? r.z : r.w;
}

// Weights [8c, 8c + 8) of a lane's 16 bytes of codes, as floats: int8 the codes themselves (the
// row's scale is applied to the sum), NF4 the code book's values (the block's absmax likewise).
template <QuantWeights QW>
__device__ __forceinline__ void decode8(const uint4& raw, int c, const float* book, float* w) {
  if constexpr (QW == QuantWeights::int8) {
    // An int-to-float conversion runs at a quarter of the FMA rate on sm_80/sm_90, too slow to keep
    // up with the memory; instead each code + 128 goes into the low mantissa byte of 2^23 (one
    // byte permute) and one subtraction leaves the code, exactly.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t biased = word_of(raw, 2 * c + h) ^ 0x80808080u;  // each signed byte + 128
#pragma unroll
      for (int b = 0; b < 4; ++b)
        w[4 * h + b] = __int_as_float(__byte_perm(biased, 0x4B000000u, 0x7540u | unsigned(b))) - 8388736.0f;
    }
  } else {
    const uint32_t word = word_of(raw, c);
#pragma unroll
    for (int b = 0; b < 4; ++b) {  // element 2i in the high nibble of byte i
      const uint32_t byte = (word >> (8 * b)) & 0xFFu;
      w[2 * b] = book[byte >> 4], w[2 * b + 1] = book[byte & 0x0Fu];
    }
  }
}

template <ActType XT>
__device__ __forceinline__ float as_bf16(float v) {
  if constexpr (XT == ActType::f32) return __bfloat162float(__float2bfloat16_rn(v));
  else return v;
}

// As cuda/gemv.cu's kernel: a block's warps take groups of kCols adjacent columns, SPLIT warps
// share each group's K (interleaved in steps of 32 loads) and meet in shared memory; each round
// issues every column's 16-byte load before any arithmetic. A lane's 32 NF4 codes lie in one
// 64-block (K is whole blocks), so its products are summed first and scaled once by the absmax.
// GATED: x is gate|up, each x value act(gate) · up (gemv_io.cuh's load8_gated).
template <QuantWeights QW, ActType XT, int M, int SPLIT, bool GATED>
__global__ void __launch_bounds__(kWarps * 32)
    quant_gemv_kernel(void* y, const void* x, const uint8_t* codes, const float* scales, const float* bias,
                      CodeBook book_in, int64_t N, int64_t K, int64_t ld_x, int64_t ld_y, bool relu, GemvGate gate) {
  using P = Packing<QW>;
  constexpr int kColumns = kWarps / SPLIT * kCols;
  __shared__ float partial[kWarps][kCols][M];
  __shared__ float book[16];
  if (threadIdx.x < 16) book[threadIdx.x] = book_in.v[threadIdx.x];
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int group = warp / SPLIT, part = warp % SPLIT;
  const int64_t row_bytes = QW == QuantWeights::int8 ? K : K / 2;
  for (int64_t n0 = int64_t(blockIdx.x) * kColumns; n0 < N; n0 += int64_t(gridDim.x) * kColumns) {
    const int64_t first = n0 + int64_t(group) * kCols;
    float acc[kCols][M];
#pragma unroll
    for (int j = 0; j < kCols; ++j)
#pragma unroll
      for (int m = 0; m < M; ++m) acc[j][m] = 0.0f;
#pragma unroll 2
    for (int64_t k = (int64_t(part) * 32 + lane) * P::kPerLoad; k < K; k += int64_t(32) * P::kPerLoad * SPLIT) {
      uint4 raw[kCols];
      float absmax[kCols];
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const bool real = first + j < N;
        const int64_t n = real ? first + j : first;
        raw[j] =
            real ? __ldg(reinterpret_cast<const uint4*>(codes + n * row_bytes + (QW == QuantWeights::int8 ? k : k / 2)))
                 : make_uint4(0, 0, 0, 0);
        absmax[j] = QW == QuantWeights::nf4 && real ? __ldg(scales + (n * K + k) / 64) : 0.0f;
      }
      float sum[kCols][M];
#pragma unroll
      for (int j = 0; j < kCols; ++j)
#pragma unroll
        for (int m = 0; m < M; ++m) sum[j][m] = 0.0f;
#pragma unroll
      for (int c = 0; c < P::kChunks; ++c) {
        float xv[M][8];
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const char* xp = static_cast<const char*>(x) + (m * ld_x + k + 8 * c) * act_bytes<XT>();
          if constexpr (GATED) load8_gated<XT>(xp, K * act_bytes<XT>(), gate, xv[m]);
          else load8<XT>(xp, xv[m]);
#pragma unroll
          for (int e = 0; e < 8; ++e) xv[m][e] = as_bf16<XT>(xv[m][e]);
        }
#pragma unroll
        for (int j = 0; j < kCols; ++j) {
          float w[8];
          decode8<QW>(raw[j], c, book, w);
#pragma unroll
          for (int m = 0; m < M; ++m)
#pragma unroll
            for (int e = 0; e < 8; ++e) sum[j][m] = fmaf(xv[m][e], w[e], sum[j][m]);
        }
      }
#pragma unroll
      for (int j = 0; j < kCols; ++j)
#pragma unroll
        for (int m = 0; m < M; ++m)
          acc[j][m] = QW == QuantWeights::nf4 ? fmaf(sum[j][m], absmax[j], acc[j][m]) : acc[j][m] + sum[j][m];
    }
#pragma unroll
    for (int j = 0; j < kCols; ++j)
#pragma unroll
      for (int m = 0; m < M; ++m) acc[j][m] = warp_sum(acc[j][m]);
    if constexpr (SPLIT > 1) {
      if (lane == 0)
#pragma unroll
        for (int j = 0; j < kCols; ++j)
#pragma unroll
          for (int m = 0; m < M; ++m) partial[warp][j][m] = acc[j][m];
      __syncthreads();
      if (part == 0)
#pragma unroll
        for (int j = 0; j < kCols; ++j)
#pragma unroll
          for (int m = 0; m < M; ++m)
            for (int p = 1; p < SPLIT; ++p) acc[j][m] += partial[warp + p][j][m];
      __syncthreads();  // partial is reused by the next round
    }
    if (lane == 0 && part == 0) {
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const int64_t n = first + j;
        if (n >= N) break;
        const float row_scale = QW == QuantWeights::int8 ? scales[n] : 1.0f;
#pragma unroll
        for (int m = 0; m < M; ++m) {
          float v = acc[j][m] * row_scale;
          if (bias) v += bias[n];
          if (relu) v = fmaxf(v, 0.0f);
          store1<XT>(y, m * ld_y + n, v);
        }
      }
    }
  }
}

template <QuantWeights QW, ActType XT, int M, int SPLIT, bool GATED>
void launch_kernel(int device, void* y, const void* x, const void* codes, const float* scales, const float* bias,
                   const QuantGemvArgs& a) {
  constexpr int kColumns = kWarps / SPLIT * kCols;
  const auto kernel = quant_gemv_kernel<QW, XT, M, SPLIT, GATED>;
  // One wave of resident blocks, each looping over its columns (as cuda/gemv.cu).
  static const int resident = [&] {
    int n = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kWarps * 32, 0) == cudaSuccess && n > 0 ? n : 1;
  }();
  const int64_t blocks = (a.N + kColumns - 1) / kColumns, wave = int64_t(resident) * multiprocessors(device);
  kernel<<<dim3(unsigned(blocks < wave ? blocks : wave)), kWarps * 32, 0, stream(device)>>>(
      y, x, static_cast<const uint8_t*>(codes), scales, bias, nf4_book(), a.N, a.K, a.ld_x, a.ld_y, a.relu, a.gate);
}

template <QuantWeights QW, ActType XT, int SPLIT, bool GATED>
void launch_gated(int device, void* y, const void* x, const void* codes, const float* scales, const float* bias,
                  const QuantGemvArgs& a) {
  switch (a.M) {
    case 1: launch_kernel<QW, XT, 1, SPLIT, GATED>(device, y, x, codes, scales, bias, a); break;
    case 2: launch_kernel<QW, XT, 2, SPLIT, GATED>(device, y, x, codes, scales, bias, a); break;
    case 3: launch_kernel<QW, XT, 3, SPLIT, GATED>(device, y, x, codes, scales, bias, a); break;
    default: launch_kernel<QW, XT, 4, SPLIT, GATED>(device, y, x, codes, scales, bias, a); break;
  }
}

// The plain kernel, or the one that forms the gate as it loads x (a separate instance).
template <QuantWeights QW, ActType XT, int SPLIT>
void launch_rows(int device, void* y, const void* x, const void* codes, const float* scales, const float* bias,
                 const QuantGemvArgs& a) {
  if (a.gate == GemvGate::none) launch_gated<QW, XT, SPLIT, false>(device, y, x, codes, scales, bias, a);
  else launch_gated<QW, XT, SPLIT, true>(device, y, x, codes, scales, bias, a);
}

// Warps per column group: more while the columns alone give too few warps to keep enough loads
// in flight, and while each warp keeps at least one load per lane (cuda/gemv.cu's rule).
template <QuantWeights QW, ActType XT>
void launch(int device, void* y, const void* x, const void* codes, const float* scales, const float* bias,
            const QuantGemvArgs& a) {
  const int64_t steps = a.K / (32 * Packing<QW>::kPerLoad);
  int split = 1;
  while (split < 8 && a.N * split < 16384 && steps > split) split *= 2;
  switch (split) {
    case 8: launch_rows<QW, XT, 8>(device, y, x, codes, scales, bias, a); break;
    case 4: launch_rows<QW, XT, 4>(device, y, x, codes, scales, bias, a); break;
    case 2: launch_rows<QW, XT, 2>(device, y, x, codes, scales, bias, a); break;
    default: launch_rows<QW, XT, 1>(device, y, x, codes, scales, bias, a); break;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// bf16 [N, K] = code · scale[row] (int8), one element per thread of a grid-stride loop.
__global__ void dequantize_int8_kernel(__nv_bfloat16* out, const int8_t* codes, const float* scales, int64_t N,
                                       int64_t K) {
  const int64_t n_el = N * K;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_el; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(float(codes[i]) * scales[i / K]);
}

// bf16 [N · K] = code book[code] · absmax[block], a byte (two elements) per thread.
__global__ void dequantize_nf4_kernel(__nv_bfloat162* out, const uint8_t* codes, const float* absmax, CodeBook book_in,
                                      int64_t bytes) {
  __shared__ float book[16];
  if (threadIdx.x < 16) book[threadIdx.x] = book_in.v[threadIdx.x];
  __syncthreads();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t byte = codes[i];
    const float s = absmax[2 * i / 64];
    out[i] = __halves2bfloat162(__float2bfloat16_rn(book[byte >> 4] * s), __float2bfloat16_rn(book[byte & 0x0Fu] * s));
  }
}

}  // namespace

bool quant_gemv_fits(const QuantGemvArgs& a, const void* x, const void* codes) {
  const int64_t k_multiple = a.weights == QuantWeights::int8 ? 16 : 64;
  const int64_t per16 = a.activation == DType::f32 ? 4 : 8;  // x elements in 16 bytes
  return (a.activation == DType::f32 || a.activation == DType::bf16) && a.M >= 1 && a.M <= kGemvMaxRows && a.N > 0 &&
         a.K > 0 && a.K % k_multiple == 0 && a.ld_x % per16 == 0 && aligned16(x) && aligned16(codes) &&
         (a.gate == GemvGate::none || a.ld_x >= 2 * a.K);
}

void quant_gemv(int device, void* y, const void* x, const void* codes, const float* scales, const float* bias,
                const QuantGemvArgs& a) {
  tach::check(a.activation == DType::f32 || a.activation == DType::bf16,
              "cuda quant_gemv: activations in " + std::string(dtype_name(a.activation)) +
                  "; int8 and nf4 weights take bf16 (or f32) activations");
  const bool bf16 = a.activation == DType::bf16;
  if (a.weights == QuantWeights::int8) {
    if (bf16) launch<QuantWeights::int8, ActType::bf16>(device, y, x, codes, scales, bias, a);
    else launch<QuantWeights::int8, ActType::f32>(device, y, x, codes, scales, bias, a);
  } else {
    if (bf16) launch<QuantWeights::nf4, ActType::bf16>(device, y, x, codes, scales, bias, a);
    else launch<QuantWeights::nf4, ActType::f32>(device, y, x, codes, scales, bias, a);
  }
  check_launch("quant_gemv_kernel");
}

void dequantize_weight_bf16(int device, void* out, const void* codes, const float* scales, QuantWeights w, int64_t N,
                            int64_t K) {
  if (N * K == 0) return;
  if (w == QuantWeights::int8) {
    dequantize_int8_kernel<<<grid_for(N * K, 256), 256, 0, stream(device)>>>(
        static_cast<__nv_bfloat16*>(out), static_cast<const int8_t*>(codes), scales, N, K);
    check_launch("dequantize_int8_kernel");
    return;
  }
  tach::check(N * K % 64 == 0, "cuda dequantize_weight_bf16: an NF4 weight is whole 64-blocks");
  dequantize_nf4_kernel<<<grid_for(N * K / 2, 256), 256, 0, stream(device)>>>(
      static_cast<__nv_bfloat162*>(out), static_cast<const uint8_t*>(codes), scales, nf4_book(), N * K / 2);
  check_launch("dequantize_nf4_kernel");
}

}  // namespace tach::cuda
