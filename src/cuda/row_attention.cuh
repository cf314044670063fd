// Attention with one block per query row, for grids the tiled kernel (flash_attention.cuh) would
// leave the GPU idle with: decoding (one query per row and head) and short prompts of one or few
// sequences. The block's warps split the row's visible keys between them (key j goes to warp
// j mod W); within a warp the lanes split the head's D values, so a score is one warp-wide sum
// and each lane keeps D/32 values of q and of the output accumulator in registers. Each warp runs
// its own online softmax over its keys; the warps' (max, denominator, accumulator) merge at the
// end through shared memory. Keys and values are read straight from global memory, coalesced
// (a row of D floats per warp per key): a key is read once per query row, which is cheap where
// rows are few and is why the tiled kernel stays in charge of large batches.
//
// The rules are the tiled kernel's (FlashAttentionParams): causal or bidirectional, windows,
// padded keys left out, MPNet's bias, a bidirectional row of padding only taking the mean of
// every value row, a causal one zeros. Any head size up to 32 * E.
//
// Decoding has B * H rows, a few dozen blocks on a GPU of a hundred multiprocessors, each walking
// hundreds of keys one dependent load after another. So there the launcher splits each row's keys
// over `splits` blocks (grid.x = Tq * splits): each computes its range's running max, sum and
// unnormalised accumulator and writes them to `partials`, and merge_row_partials combines them,
// as FlashDecoding does. The ranges are cut at run time from the visible keys, which under a
// captured graph are known only on the device (`device_past`).
#pragma once

#include "cuda/flash_attention.cuh"
#include "cuda/kernel_support.cuh"

namespace tach::cuda {

constexpr int kRowAttentionWarps = 8;

// T: the element type of q, k, v and out (FlashAttentionParams::dtype); the math is f32.
template <typename T, int E>
__global__ void __launch_bounds__(kRowAttentionWarps * 32) row_attention_kernel(FlashAttentionParams p, int D) {
  constexpr int W = kRowAttentionWarps;
  __shared__ float warp_max[W], warp_sum[W];
  __shared__ float warp_acc[W][E * 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int split = int(blockIdx.x % unsigned(p.splits));
  const int64_t i = blockIdx.x / unsigned(p.splits), h = blockIdx.y, b = blockIdx.z, kvh = h / (p.H / p.KVH);
  const int64_t past = p.device_past ? int64_t(*p.device_past) : p.past;
  const int64_t Tk = p.device_past ? past + p.Tq : p.Tk;
  const T* qrow = static_cast<const T*>(p.q) + b * p.q_batch_stride + i * p.ld_q + h * D;
  const T* kb = static_cast<const T*>(p.k) + b * p.kv_batch_stride + kvh * D;
  const T* vb = static_cast<const T*>(p.v) + b * p.kv_batch_stride + kvh * D;
  const int32_t* mb = p.key_mask ? p.key_mask + b * p.mask_stride : nullptr;
  const int32_t* buckets = p.bias_bucket ? p.bias_bucket + i * Tk : nullptr;

  float q[E], acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int d = lane + 32 * e;
    q[e] = d < D ? to_float(qrow[d]) : 0.0f;
    acc[e] = 0.0f;
  }
  const int64_t P = past + i;
  int64_t first = 0, end = Tk;
  if (p.causal) {
    end = min(Tk, P + 1);
    if (p.window > 0) first = max(int64_t(0), P + 1 - p.window);
  } else if (p.window > 0) {
    first = max(int64_t(0), P - p.window);
    end = min(Tk, P + p.window + 1);
  }
  if (p.splits > 1) {  // this block's share of the visible keys (possibly none)
    const int64_t chunk = (end - first + p.splits - 1) / p.splits;
    first += split * chunk;
    end = min(end, first + chunk);
  }
  float running_max = -INFINITY, denominator = 0.0f;
  for (int64_t j = first + warp; j < end; j += W) {  // j is the same across the warp
    if (mb && mb[j] == 0) continue;
    const T* krow = kb + j * p.ld_kv;
    float part = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane + 32 * e;
      if (d < D) part = fmaf(q[e], to_float(krow[d]), part);
    }
    float score = cuda::warp_sum(part) * p.scale;
    if (buckets) score += p.bias_table[int64_t(buckets[j]) * p.H + h];
    if (score > running_max) {  // rescale once per new maximum
      const float correction = expf(running_max - score);
      denominator *= correction;
#pragma unroll
      for (int e = 0; e < E; ++e) acc[e] *= correction;
      running_max = score;
    }
    const float weight = expf(score - running_max);
    denominator += weight;
    const T* vrow = vb + j * p.ld_kv;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane + 32 * e;
      if (d < D) acc[e] = fmaf(weight, to_float(vrow[d]), acc[e]);
    }
  }
  if (lane == 0) warp_max[warp] = running_max, warp_sum[warp] = denominator;
#pragma unroll
  for (int e = 0; e < E; ++e) warp_acc[warp][lane + 32 * e] = acc[e];
  __syncthreads();
  if (warp != 0) return;

  float m = -INFINITY;
  for (int w = 0; w < W; ++w) m = fmaxf(m, warp_max[w]);
  float total = 0.0f;
  float out[E];
#pragma unroll
  for (int e = 0; e < E; ++e) out[e] = 0.0f;
  if (m != -INFINITY) {
    for (int w = 0; w < W; ++w) {
      const float f = expf(warp_max[w] - m);  // 0 for a warp that saw no key
      total += warp_sum[w] * f;
#pragma unroll
      for (int e = 0; e < E; ++e) out[e] = fmaf(warp_acc[w][lane + 32 * e], f, out[e]);
    }
  } else if (!p.causal) {  // no real key visible: the mean of every value row
    for (int64_t j = 0; j < Tk; ++j) {
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const int d = lane + 32 * e;
        if (d < D) out[e] += to_float(vb[j * p.ld_kv + d]);
      }
    }
    total = float(Tk);
  }
  if (p.splits > 1) {  // (max, sum, accumulator) for the merge; splits serve causal rows only
    float* part = p.partials + (((b * p.H + h) * p.Tq + i) * p.splits + split) * (D + 2);
    if (lane == 0) part[0] = m, part[1] = total;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane + 32 * e;
      if (d < D) part[2 + d] = out[e];
    }
    return;
  }
  T* orow = static_cast<T*>(p.out) + b * p.out_batch_stride + i * p.ld_out + h * D;
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int d = lane + 32 * e;
    if (d < D) orow[d] = from_float<T>(out[e] * inv);
  }
}

// One block per (query row, head, batch row): the splits' partials [splits, D + 2] merged as the
// warps of one block are, then normalised and rounded once to T; a row no split saw a real key of
// gets zeros (causal).
template <typename T>
__global__ void merge_row_partials(FlashAttentionParams p, int D) {
  const int64_t i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const float* part = p.partials + ((b * p.H + h) * p.Tq + i) * p.splits * (D + 2);
  float m = -INFINITY;
  for (int s = 0; s < p.splits; ++s) m = fmaxf(m, part[s * (D + 2)]);
  float total = 0.0f;
  if (m != -INFINITY)
    for (int s = 0; s < p.splits; ++s) total += part[s * (D + 2) + 1] * expf(part[s * (D + 2)] - m);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  T* orow = static_cast<T*>(p.out) + b * p.out_batch_stride + i * p.ld_out + h * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = 0.0f;
    if (m != -INFINITY)
      for (int s = 0; s < p.splits; ++s) acc = fmaf(part[s * (D + 2) + 2 + d], expf(part[s * (D + 2)] - m), acc);
    orow[d] = from_float<T>(acc * inv);
  }
}

}  // namespace tach::cuda
