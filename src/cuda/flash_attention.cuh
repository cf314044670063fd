// One fused attention kernel for the encoder (bidirectional, MPNet's relative bias), the decoder
// (causal, grouped-query, key/value cache) and ModernBERT (bidirectional, grouped-query, local
// windows): scores, softmax and the weighted sum of values in one pass over the keys with an
// online softmax, so no [T, T] matrix exists in memory.
//
// Each thread owns one query row: its q and its output accumulator sit in registers, and the
// block (64 query rows of one batch row and head) walks the keys in tiles staged through shared
// memory. Per tile the running maximum moves once and the accumulator is rescaled once
// (FlashAttention's online softmax). No tensor cores: the exact version, for every case cuDNN's
// fused attention does not take.
//
// q, k, v and out are in the activation dtype (f32, bf16 or f16: the kernels are templated on the
// element type T): each element is widened to f32 as it is loaded, the scores, the online softmax
// and the accumulator stay f32, and each output is rounded once to T (to nearest even) as it is
// stored, as torch's bf16 attention keeps its softmax in f32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/convert.cuh"
#include "tach/dtype.h"

namespace tach::cuda {

struct FlashAttentionParams {
  // [.., H*D] rows in `dtype` (f32, bf16 or f16), with the strides below (in elements).
  void* out = nullptr;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  DType dtype = DType::f32;
  const int32_t* key_mask = nullptr;  // [B, mask_stride], 1 = real token; null = all real
  int64_t Tq = 0, Tk = 0, past = 0;   // query i sits at key position past + i (causal only)
  int64_t H = 0, KVH = 0;             // query heads, key/value heads (H % KVH == 0)
  int64_t q_batch_stride = 0, ld_q = 0;
  int64_t kv_batch_stride = 0, ld_kv = 0;
  int64_t out_batch_stride = 0, ld_out = 0;
  int64_t mask_stride = 0;
  float scale = 1.0f;
  // false: bidirectional: every key within the window is visible (all of them without one), padded
  //        keys are left out, and a row whose visible keys are all padding gets the mean of every
  //        value row, as transformers' additive finfo.min mask gives (its scores all round to one
  //        value, so the softmax is uniform over every key);
  // true:  query i sees keys [0, past + i], padded keys are left out, and a row that sees no
  //        real key gets zeros.
  bool causal = false;
  // A query at key position P sees keys (P - window, P] when causal (Mistral's and Gemma's sliding
  // layers), [P - window, P + window] when bidirectional (ModernBERT's local layers); 0: no window.
  int64_t window = 0;
  // MPNet's relative position bias: score(h, i, j) += bias_table[bias_bucket[i*Tk + j] * H + h]
  // (bucket [Tq, Tk] i32 and table [buckets, H] f32, both on the device); null: none.
  const int32_t* bias_bucket = nullptr;
  const float* bias_table = nullptr;
  // Decoding under a captured graph: the cache length before this call, one i32 in device memory,
  // read by the kernel (so that one capture serves every step); `past` and `Tk` are then the most
  // they can be, and only size the grid. Causal rows only (the launcher takes the rows kernel).
  const int32_t* device_past = nullptr;
  // Split-K for few rows (decoding): each query row's keys are cut into `splits` ranges, one block
  // each, which write their running (max, sum, accumulator) to `partials` [B, H, Tq, splits, D + 2];
  // a second kernel merges them. Set by the launcher; 1: no split.
  int splits = 1;
  float* partials = nullptr;
  // Which kernel: 0 the launcher picks (rows when tiles would leave the GPU idle, or for a head
  // size the tiles have no instantiation for), 1 the tiled kernel, 2 one block per row. Tests
  // run both on every case.
  int kernel = 0;
};

constexpr int kFlashQueryRows = 64;  // threads per block, one query row each

template <typename T, int D, int kKeys>
__global__ void __launch_bounds__(kFlashQueryRows) flash_attention_kernel(FlashAttentionParams p) {
  __shared__ float ks[kKeys][D];
  __shared__ float vs[kKeys][D];
  __shared__ float key_bias[kKeys];  // 0, finfo.min (additive mask) or -inf (left out)
  const int64_t b = blockIdx.z, h = blockIdx.y, kvh = h / (p.H / p.KVH);
  const int64_t first_row = int64_t(blockIdx.x) * blockDim.x;
  const int64_t i = first_row + threadIdx.x;
  const bool active = i < p.Tq;

  float qr[D], acc[D];
  const T* qrow = static_cast<const T*>(p.q) + b * p.q_batch_stride + i * p.ld_q + h * D;
#pragma unroll
  for (int d = 0; d < D; ++d) {
    qr[d] = active ? to_float(qrow[d]) : 0.0f;
    acc[d] = 0.0f;
  }
  float running_max = -INFINITY, denominator = 0.0f;

  const int64_t last_row = min(p.Tq - 1, first_row + int64_t(blockDim.x) - 1);
  // Keys [key_begin, key_end) are the ones some row of the block sees.
  int64_t key_begin = 0, key_end = p.Tk;
  if (p.causal) {
    key_end = min(p.Tk, p.past + last_row + 1);
    if (p.window > 0) key_begin = max(int64_t(0), p.past + first_row + 1 - p.window);
  } else if (p.window > 0) {
    key_begin = max(int64_t(0), p.past + first_row - p.window);
    key_end = min(p.Tk, p.past + last_row + p.window + 1);
  }
  key_begin -= key_begin % kKeys;
  // This row's own visible keys [row_first, row_end).
  const int64_t P = p.past + i;
  const int64_t row_first = p.window > 0 ? (p.causal ? P + 1 - p.window : P - p.window) : 0;
  const int64_t row_end = p.causal ? P + 1 : (p.window > 0 ? P + p.window + 1 : p.Tk);
  const T* kb = static_cast<const T*>(p.k) + b * p.kv_batch_stride + kvh * D;
  const T* vb = static_cast<const T*>(p.v) + b * p.kv_batch_stride + kvh * D;
  const int32_t* mb = p.key_mask ? p.key_mask + b * p.mask_stride : nullptr;
  const int32_t* buckets = p.bias_bucket && active ? p.bias_bucket + i * p.Tk : nullptr;

  for (int64_t j0 = key_begin; j0 < key_end; j0 += kKeys) {
    __syncthreads();  // the previous tile is no longer read
    for (int e = threadIdx.x; e < kKeys * D; e += blockDim.x) {
      const int j = e / D, d = e % D;
      const int64_t key = j0 + j;
      const bool in = key < key_end;
      ks[j][d] = in ? to_float(kb[key * p.ld_kv + d]) : 0.0f;
      vs[j][d] = in ? to_float(vb[key * p.ld_kv + d]) : 0.0f;
    }
    for (int j = threadIdx.x; j < kKeys; j += blockDim.x) {
      const int64_t key = j0 + j;
      key_bias[j] = key >= key_end || (mb && mb[key] == 0) ? -INFINITY : 0.0f;  // padding is left out
    }
    __syncthreads();

    float s[kKeys];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      float dot = 0.0f;
#pragma unroll
      for (int d = 0; d < D; ++d) dot = fmaf(qr[d], ks[j][d], dot);
      const int64_t key = j0 + j;
      float score = dot * p.scale + key_bias[j];
      if (buckets && key < p.Tk) score += p.bias_table[int64_t(buckets[key]) * p.H + h];
      if (key < row_first || key >= row_end) score = -INFINITY;
      s[j] = score;
      tile_max = fmaxf(tile_max, score);
    }
    if (tile_max == -INFINITY) continue;  // nothing this row sees in the tile (all threads reach the next sync)
    const float new_max = fmaxf(running_max, tile_max);
    const float correction = expf(running_max - new_max);  // 0 on the first tile (running_max = -inf)
    denominator *= correction;
#pragma unroll
    for (int d = 0; d < D; ++d) acc[d] *= correction;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      const float weight = expf(s[j] - new_max);
      denominator += weight;
#pragma unroll
      for (int d = 0; d < D; ++d) acc[d] = fmaf(weight, vs[j][d], acc[d]);
    }
    running_max = new_max;
  }

  // Bidirectional rows that saw no real key take the mean of every value row (rare: padding
  // positions of a left-padded row under a window, or a row of padding only). The whole block
  // walks the keys again when any of its rows needs it.
  const bool padding_only = active && !p.causal && denominator == 0.0f;
  if (__syncthreads_or(padding_only)) {
    if (padding_only) {  // only these rows start over; the others keep their accumulators
#pragma unroll
      for (int d = 0; d < D; ++d) acc[d] = 0.0f;
    }
    for (int64_t j0 = 0; j0 < p.Tk; j0 += kKeys) {
      __syncthreads();
      for (int e = threadIdx.x; e < kKeys * D; e += blockDim.x) {
        const int j = e / D, d = e % D;
        vs[j][d] = j0 + j < p.Tk ? to_float(vb[(j0 + j) * p.ld_kv + d]) : 0.0f;
      }
      __syncthreads();
      if (padding_only) {
#pragma unroll
        for (int j = 0; j < kKeys; ++j)
#pragma unroll
          for (int d = 0; d < D; ++d) acc[d] += vs[j][d];
      }
    }
    if (padding_only) denominator = float(p.Tk);
  }
  if (!active) return;
  T* orow = static_cast<T*>(p.out) + b * p.out_batch_stride + i * p.ld_out + h * D;
  const float inv = denominator > 0.0f ? 1.0f / denominator : 0.0f;
#pragma unroll
  for (int d = 0; d < D; ++d) orow[d] = from_float<T>(acc[d] * inv);
}

// Which kernel a launch ran: none (no kernel takes the head size: D over 256; the caller says so),
// the tiled kernel, or the rows kernel (one block per query row, the keys split for few rows).
enum class FlashAttentionLaunch { none, tiles, rows };

// Launches a kernel for the head size and p.dtype on tach's stream of `device`, and says which.
FlashAttentionLaunch launch_flash_attention(int device, FlashAttentionParams p, int64_t B, int64_t D);

}  // namespace tach::cuda
