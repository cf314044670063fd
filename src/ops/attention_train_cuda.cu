// Encoder attention's training forward and backward on the GPU: the function of
// attention_forward_train_cpu and attention_backward_cpu (ops/attention_cpu.cc), key padding mask,
// dropout on the probabilities and MPNet's relative position bias (and its gradient) included.
// The probabilities [B, H, T, T] are written to device memory (the caller's probs, or a scratch
// when the fused path saves none), and so are the score gradients in the backward.
#include <cfloat>

#include "cuda/attention_train.cuh"
#include "cuda/stream.h"
#include "ops/attention.h"
#include "ops/dropout_mask.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

constexpr int kThreads = cuda::kAttentionTrainThreads;

// What every kernel reads (see attention.h for the layouts).
struct EncoderShape {
  int64_t T = 0, Tq = 0, H = 0, D = 0, ld_in = 0, ld_out = 0;
  float scale = 1.0f;
  const int32_t* mask = nullptr;  // [B, T] or null
  const int32_t* keys = nullptr;  // [B] keys used per sequence (sequence_keys_kernel), or null: all T
  ScoreBias bias;
  // Dropout on the probabilities: the CPU's mask (ops/dropout_mask.h, compiled for both devices)
  // over element ((b*H + h)*T + i)*T + j, so the GPU drops exactly what the CPU drops.
  float dropout_p = 0.0f, dropout_scale = 1.0f;
  uint32_t threshold = 0;
  uint64_t dropout_key = 0;
};

// x after dropout, x being element `index` of probs [B, H, T, T] (or its gradient).
__device__ __forceinline__ float dropped(const EncoderShape& s, float x, int64_t index) {
  if (s.dropout_p <= 0.0f) return x;
  return dropout_keeps_at(s.dropout_key, index, s.threshold) ? x * s.dropout_scale : 0.0f;
}

// Keys a sequence uses, as the CPU's keys_per_sequence: a right-padded mask (ones, then zeros)
// keeps its first L keys; any other pattern, or all padding, is -1 (the additive mask over all T).
__global__ void sequence_keys_kernel(int32_t* keys, const int32_t* mask, int64_t B, int64_t T) {
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < B; b += int64_t(gridDim.x) * blockDim.x) {
    const int32_t* m = mask + b * T;
    int64_t L = 0;
    while (L < T && m[L] != 0) ++L;
    bool prefix = L > 0;
    for (int64_t j = L; j < T && prefix; ++j) prefix = m[j] == 0;
    keys[b] = prefix ? int32_t(L) : -1;
  }
}

// The keys sequence b's rows read: its prefix, or all T with the additive mask.
__device__ __forceinline__ int64_t keys_used(const EncoderShape& s, int64_t b, bool* additive) {
  const int32_t L = s.keys ? s.keys[b] : int32_t(s.T);
  *additive = L < 0;
  return L < 0 ? s.T : L;
}

// One block per (query row i, pair bh = b*H + h): P[bh, i, :] = softmax(scale q_i·kᵀ + bias +
// mask) over the keys used, zero past them; with out, out_i = dropout(P_i) · V.
__global__ void probs_kernel(float* out, float* probs, const float* q, const float* k, const float* v, EncoderShape s) {
  __shared__ float scratch[32];
  const int64_t i = blockIdx.x, bh = blockIdx.y, b = bh / s.H, h = bh % s.H;
  bool additive;
  const int64_t L = keys_used(s, b, &additive);
  const int64_t base = b * s.T * s.ld_in + h * s.D;  // (b, row 0, head h) of q, k, v
  const float* qi = q + base + i * s.ld_in;
  float* P = probs + (bh * s.T + i) * s.T;
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t j = warp; j < L; j += warps) {
    float score = s.scale * cuda::warp_dot(qi, k + base + j * s.ld_in, s.D);
    if (s.bias.table) score += s.bias.table[int64_t(s.bias.bucket[i * s.T + j]) * s.H + h];
    if (additive && s.mask[b * s.T + j] == 0) score += -FLT_MAX;  // finfo(f32).min, as the CPU
    if ((threadIdx.x & 31) == 0) P[j] = score;
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) mx = fmaxf(mx, P[j]);
  mx = cuda::block_max(mx, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {
    const float e = expf(P[j] - mx);
    P[j] = e;
    sum += e;
  }
  const float inv = 1.0f / cuda::block_sum(sum, scratch);
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) P[j] *= inv;
  for (int64_t j = L + threadIdx.x; j < s.T; j += blockDim.x) P[j] = 0.0f;
  if (!out) return;
  __syncthreads();
  const int64_t first = (bh * s.T + i) * s.T;  // P_i's index in probs: its dropout mask's
  for (int64_t d = threadIdx.x; d < s.D; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < L; ++j) acc += dropped(s, P[j], first + j) * v[base + j * s.ld_in + d];
    out[b * s.T * s.ld_out + i * s.ld_out + h * s.D + d] = acc;
  }
}

// One block per (query row i, pair bh): the score gradients G_i = P_i ⊙ (dPd_i - Σ_j P dPd) where
// dPd_i = dropout(dO_i · Vᵀ) (zero past the keys used), then dQ_i = scale · G_i · K.
__global__ void score_grad_kernel(float* dq, float* G, const float* probs, const float* dout, const float* k,
                                  const float* v, EncoderShape s) {
  __shared__ float scratch[32];
  const int64_t i = blockIdx.x, bh = blockIdx.y, b = bh / s.H, h = bh % s.H;
  bool additive;
  const int64_t L = keys_used(s, b, &additive);
  const int64_t base = b * s.T * s.ld_in + h * s.D;
  const float* dOi = dout + b * s.T * s.ld_out + i * s.ld_out + h * s.D;
  const float* P = probs + (bh * s.T + i) * s.T;
  float* Gi = G + (bh * s.Tq + i) * s.T;
  const int64_t first = (bh * s.T + i) * s.T;
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t j = warp; j < L; j += warps) {
    const float g = cuda::warp_dot(dOi, v + base + j * s.ld_in, s.D);
    if ((threadIdx.x & 31) == 0) Gi[j] = dropped(s, g, first + j);
  }
  __syncthreads();
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) dot += P[j] * Gi[j];
  dot = cuda::block_sum(dot, scratch);
  for (int64_t j = threadIdx.x; j < L; j += blockDim.x) Gi[j] = P[j] * (Gi[j] - dot);
  for (int64_t j = L + threadIdx.x; j < s.T; j += blockDim.x) Gi[j] = 0.0f;
  __syncthreads();
  for (int64_t d = threadIdx.x; d < s.D; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < L; ++j) acc += Gi[j] * k[base + j * s.ld_in + d];
    dq[base + i * s.ld_in + d] = s.scale * acc;
  }
}

// One block per (key row j, pair bh): dV_j = Σ_i dropout(P)[i, j] dO_i and dK_j = scale Σ_i G[i, j] q_i
// over the query rows i < Tq, in order; zero past the keys used (never read).
__global__ void key_grad_kernel(float* dk, float* dv, const float* probs, const float* G, const float* dout,
                                const float* q, EncoderShape s) {
  __shared__ float pd[kThreads], g[kThreads];  // one chunk of column j of dropout(P) and of G
  const int64_t j = blockIdx.x, bh = blockIdx.y, b = bh / s.H, h = bh % s.H;
  bool additive;
  const int64_t L = keys_used(s, b, &additive);
  const int64_t base = b * s.T * s.ld_in + h * s.D;
  float* dkj = dk + base + j * s.ld_in;
  float* dvj = dv + base + j * s.ld_in;
  if (j >= L) {  // block-uniform
    for (int64_t d = threadIdx.x; d < s.D; d += blockDim.x) dkj[d] = dvj[d] = 0.0f;
    return;
  }
  const float* dO = dout + b * s.T * s.ld_out + h * s.D;
  // Each thread keeps the sums of its channels d = threadIdx.x + c * blockDim.x (D <= 256 < 4·128).
  constexpr int kChannels = 4;
  float av[kChannels] = {}, ak[kChannels] = {};
  for (int64_t i0 = 0; i0 < s.Tq; i0 += blockDim.x) {
    const int64_t n = min(int64_t(blockDim.x), s.Tq - i0);
    __syncthreads();  // the previous chunk's readers are done
    if (threadIdx.x < n) {
      const int64_t i = i0 + threadIdx.x, index = (bh * s.T + i) * s.T + j;
      pd[threadIdx.x] = dropped(s, probs[index], index);
      g[threadIdx.x] = G[(bh * s.Tq + i) * s.T + j];
    }
    __syncthreads();
    for (int c = 0; c < kChannels; ++c) {
      const int64_t d = threadIdx.x + int64_t(c) * blockDim.x;
      if (d >= s.D) break;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t i = i0 + r;
        av[c] += pd[r] * dO[i * s.ld_out + d];
        ak[c] += g[r] * q[base + i * s.ld_in + d];
      }
    }
  }
  for (int c = 0; c < kChannels; ++c) {
    const int64_t d = threadIdx.x + int64_t(c) * blockDim.x;
    if (d >= s.D) break;
    dvj[d] = av[c];
    dkj[d] = s.scale * ak[c];
  }
}

// One block per pair bh: parts[bh, n] = Σ G[bh, i, j] over the (i < Tq, j < L) whose bucket is n.
// Each thread sums its rows into its own shared slots, then the slots are added in thread order.
__global__ void bias_parts_kernel(float* parts, const float* G, EncoderShape s) {
  extern __shared__ float slots[];  // [blockDim.x, buckets]
  const int64_t bh = blockIdx.x, b = bh / s.H, NB = s.bias.buckets;
  bool additive;
  const int64_t L = keys_used(s, b, &additive);
  float* mine = slots + threadIdx.x * NB;
  for (int64_t n = 0; n < NB; ++n) mine[n] = 0.0f;
  for (int64_t i = threadIdx.x; i < s.Tq; i += blockDim.x) {
    const float* Gi = G + (bh * s.Tq + i) * s.T;
    const int32_t* bucket = s.bias.bucket + i * s.T;
    for (int64_t j = 0; j < L; ++j) mine[bucket[j]] += Gi[j];
  }
  __syncthreads();
  for (int64_t n = threadIdx.x; n < NB; n += blockDim.x) {
    float sum = 0.0f;
    for (unsigned t = 0; t < blockDim.x; ++t) sum += slots[t * NB + n];
    parts[bh * NB + n] = sum;
  }
}

// grad[n, h] += parts[b, h, n] for b = 0, 1, ... B-1 in order, as the CPU. One thread per entry.
__global__ void bias_table_grad_kernel(float* grad, const float* parts, int64_t B, int64_t H, int64_t NB) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < NB * H; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = e / H, h = e % H;
    float acc = grad[e];
    for (int64_t b = 0; b < B; ++b) acc += parts[(b * H + h) * NB + n];
    grad[e] = acc;
  }
}

EncoderShape encoder_shape(int64_t T, int64_t Tq, int64_t H, int64_t D, int64_t ld_in, int64_t ld_out, float scale,
                           const int32_t* mask, const int32_t* keys, const ScoreBias& bias, float dropout_p,
                           uint64_t dropout_key) {
  check(D <= 4 * kThreads, "attention on CUDA: head size " + std::to_string(D) + " exceeds 512");
  EncoderShape s;
  s.T = T, s.Tq = Tq, s.H = H, s.D = D, s.ld_in = ld_in, s.ld_out = ld_out, s.scale = scale;
  s.mask = mask, s.keys = keys, s.bias = bias;
  if (dropout_p > 0.0f) {
    s.dropout_p = dropout_p, s.dropout_scale = 1.0f / (1.0f - dropout_p);
    s.threshold = dropout_threshold(dropout_p), s.dropout_key = dropout_key;
  }
  return s;
}

// keys [B] i32 on the device from the mask (null: no mask, every key used).
Tensor sequence_keys(int device, const int32_t* mask, int64_t B, int64_t T) {
  if (!mask) return Tensor();
  Tensor keys = Tensor::empty({B}, DType::i32, Device::cuda(device), MemoryCategory::workspace);
  sequence_keys_kernel<<<cuda::grid_for(B, 128), 128, 0, cuda::stream(device)>>>(keys.data<int32_t>(), mask, B, T);
  cuda::check_launch("sequence_keys_kernel");
  return keys;
}

const int32_t* keys_of(const Tensor& keys) { return keys.defined() ? keys.data<int32_t>() : nullptr; }

Tensor probs_scratch(int device, int64_t B, int64_t H, int64_t T) {
  return Tensor::empty({B, H, T, T}, DType::f32, Device::cuda(device), MemoryCategory::workspace);
}

}  // namespace

void attention_forward_train_cuda(int device, float* out, float* probs, const float* q, const float* k, const float* v,
                                  const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                                  int64_t ld_out, float scale, float dropout_p, uint64_t dropout_key, int64_t Tq,
                                  const ScoreBias& bias) {
  if (Tq < 0) Tq = T;
  const Tensor keys = sequence_keys(device, mask, B, T);
  const EncoderShape s =
      encoder_shape(T, Tq, H, D, ld_in, ld_out, scale, mask, keys_of(keys), bias, dropout_p, dropout_key);
  Tensor scratch = probs ? Tensor() : probs_scratch(device, B, H, T);
  float* P = probs ? probs : scratch.data<float>();
  probs_kernel<<<cuda::rows_by_heads(Tq, B * H, "attention"), kThreads, 0, cuda::stream(device)>>>(out, P, q, k, v, s);
  cuda::check_launch("probs_kernel");
}

void attention_backward_cuda(int device, float* dq, float* dk, float* dv, float* d_bias_table, float* d_bias_parts,
                             const float* dout, const float* probs, const float* q, const float* k, const float* v,
                             const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                             int64_t ld_out, float scale, float dropout_p, uint64_t dropout_key, int64_t Tq,
                             const ScoreBias& bias) {
  if (Tq < 0) Tq = T;
  const char* op = "attention_backward";
  const Tensor keys = sequence_keys(device, mask, B, T);
  const EncoderShape s =
      encoder_shape(T, Tq, H, D, ld_in, ld_out, scale, mask, keys_of(keys), bias, dropout_p, dropout_key);
  const cudaStream_t stream = cuda::stream(device);
  Tensor recomputed;
  if (!probs) {  // the fused path: the forward's probabilities again, from q and k
    recomputed = probs_scratch(device, B, H, T);
    probs_kernel<<<cuda::rows_by_heads(Tq, B * H, op), kThreads, 0, stream>>>(nullptr, recomputed.data<float>(), q, k,
                                                                              v, s);
    cuda::check_launch("probs_kernel");
    probs = recomputed.data<float>();
  }
  const Tensor G = Tensor::empty({B, H, Tq, T}, DType::f32, Device::cuda(device), MemoryCategory::workspace);
  score_grad_kernel<<<cuda::rows_by_heads(Tq, B * H, op), kThreads, 0, stream>>>(dq, G.data<float>(), probs, dout, k, v,
                                                                                 s);
  cuda::check_launch("score_grad_kernel");
  key_grad_kernel<<<cuda::rows_by_heads(T, B * H, op), kThreads, 0, stream>>>(dk, dv, probs, G.data<float>(), dout, q,
                                                                              s);
  cuda::check_launch("key_grad_kernel");
  if (!d_bias_table) return;
  // Each thread of bias_parts_kernel holds a slot per bucket in shared memory (48 KiB).
  const int64_t NB = bias.buckets;
  int threads = kThreads;
  while (threads > 32 && size_t(threads) * size_t(NB) * sizeof(float) > 48 * 1024) threads /= 2;
  const size_t shared = size_t(threads) * size_t(NB) * sizeof(float);
  check(shared <= 48 * 1024, std::string(op) + " on CUDA: " + std::to_string(NB) +
                                 " relative position buckets exceed the bias gradient's shared memory (384 at most)");
  bias_parts_kernel<<<unsigned(B * H), threads, shared, stream>>>(d_bias_parts, G.data<float>(), s);
  cuda::check_launch("bias_parts_kernel");
  bias_table_grad_kernel<<<cuda::grid_for(NB * H, 256), 256, 0, stream>>>(d_bias_table, d_bias_parts, B, H, NB);
  cuda::check_launch("bias_table_grad_kernel");
}

}  // namespace tach::ops
