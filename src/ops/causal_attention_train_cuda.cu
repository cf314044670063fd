// Decoder (and ModernBERT) attention's training forward and backward on the GPU: the function of
// causal_attention_forward_cpu and causal_attention_backward_cpu (ops/causal_attention_cpu.cc):
// causal or bidirectional, grouped-query heads, sliding windows, the key padding mask, and the
// rows whose every visible key is padding. The probabilities [B, H, T, T] are written to device
// memory (the caller's probs, or a scratch when the fused path saves none), and so are the score
// gradients in the backward.
#include "cuda/attention_train.cuh"
#include "cuda/stream.h"
#include "ops/causal_attention.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

constexpr int kThreads = cuda::kAttentionTrainThreads;

// What every kernel reads: the training layout of CausalAttentionArgs (past = 0, Tq = T).
struct CausalShape {
  int64_t T = 0, H = 0, KVH = 0, D = 0, ld_q = 0, ld_kv = 0, batch_stride_kv = 0, ld_out = 0, mask_stride = 0;
  int64_t window = 0;
  bool causal = true;
  float scale = 1.0f;
  const int32_t* mask = nullptr;  // [B, mask_stride] or null
};

// The keys [first, end) query i sees: ops::key_range with past = 0.
__device__ __forceinline__ void visible_keys(const CausalShape& s, int64_t i, int64_t* first, int64_t* end) {
  if (s.causal) {
    *first = s.window > 0 ? max(int64_t(0), i + 1 - s.window) : 0;
    *end = i + 1;
  } else if (s.window <= 0) {
    *first = 0, *end = s.T;
  } else {
    *first = max(int64_t(0), i - s.window);
    *end = min(s.T, i + s.window + 1);
  }
}

// The queries [first, end) that see key j: the inverse of visible_keys (causal: j <= i < j + window).
__device__ __forceinline__ void seeing_queries(const CausalShape& s, int64_t j, int64_t* first, int64_t* end) {
  if (s.causal) {
    *first = j;
    *end = s.window > 0 ? min(s.T, j + s.window) : s.T;
  } else if (s.window <= 0) {
    *first = 0, *end = s.T;
  } else {
    *first = max(int64_t(0), j - s.window);
    *end = min(s.T, j + s.window + 1);
  }
}

// One block per (query row i, pair bh = b*H + h): P[bh, i, :] = the softmax of scale q_i·kᵀ over
// the visible real keys, zero elsewhere; with out, out_i = P_i · V. A row whose every visible key
// is padding gets P = 0 and out = 0 (causal) or the mean of every value row (bidirectional).
__global__ void causal_probs_kernel(float* out, float* probs, const float* q, const float* k, const float* v,
                                    CausalShape s) {
  __shared__ float scratch[32];
  const int64_t i = blockIdx.x, bh = blockIdx.y, b = bh / s.H, h = bh % s.H, kvh = h / (s.H / s.KVH);
  const float* qi = q + (b * s.T + i) * s.ld_q + h * s.D;
  const float* kb = k + b * s.batch_stride_kv + kvh * s.D;
  const float* vb = v + b * s.batch_stride_kv + kvh * s.D;
  const int32_t* mb = s.mask ? s.mask + b * s.mask_stride : nullptr;
  float* P = probs + (bh * s.T + i) * s.T;
  float* oi = out ? out + (b * s.T + i) * s.ld_out + h * s.D : nullptr;
  int64_t first, end;
  visible_keys(s, i, &first, &end);
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t j = first + warp; j < end; j += warps) {
    const float dot = cuda::warp_dot(qi, kb + j * s.ld_kv, s.D);
    if ((threadIdx.x & 31) == 0) P[j] = (mb && mb[j] == 0) ? -INFINITY : s.scale * dot;
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int64_t j = first + threadIdx.x; j < end; j += blockDim.x) mx = fmaxf(mx, P[j]);
  mx = cuda::block_max(mx, scratch);
  if (mx == -INFINITY) {  // every visible key is padding (block-uniform)
    for (int64_t j = threadIdx.x; j < s.T; j += blockDim.x) P[j] = 0.0f;
    if (!oi) return;
    for (int64_t d = threadIdx.x; d < s.D; d += blockDim.x) {
      float o = 0.0f;
      if (!s.causal) {
        for (int64_t j = 0; j < s.T; ++j) o += vb[j * s.ld_kv + d];
        o /= float(s.T);
      }
      oi[d] = o;
    }
    return;
  }
  float sum = 0.0f;
  for (int64_t j = first + threadIdx.x; j < end; j += blockDim.x) {
    const float e = P[j] == -INFINITY ? 0.0f : expf(P[j] - mx);
    P[j] = e;
    sum += e;
  }
  const float inv = 1.0f / cuda::block_sum(sum, scratch);
  for (int64_t j = threadIdx.x; j < s.T; j += blockDim.x)
    if (j >= first && j < end) P[j] *= inv;
    else P[j] = 0.0f;
  if (!oi) return;
  __syncthreads();
  for (int64_t d = threadIdx.x; d < s.D; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = first; j < end; ++j) acc += P[j] * vb[j * s.ld_kv + d];
    oi[d] = acc;
  }
}

// One block per (query row i, pair bh): the score gradients G_i = P_i ⊙ (dP_i - Σ_j P dP) with
// dP_i = dO_i · Vᵀ over the visible keys (zero elsewhere), then dQ_i = scale · G_i · K.
__global__ void causal_score_grad_kernel(float* dq, float* G, const float* probs, const float* dout, const float* k,
                                         const float* v, CausalShape s) {
  __shared__ float scratch[32];
  const int64_t i = blockIdx.x, bh = blockIdx.y, b = bh / s.H, h = bh % s.H, kvh = h / (s.H / s.KVH);
  const float* dOi = dout + (b * s.T + i) * s.ld_out + h * s.D;
  const float* kb = k + b * s.batch_stride_kv + kvh * s.D;
  const float* vb = v + b * s.batch_stride_kv + kvh * s.D;
  const float* P = probs + (bh * s.T + i) * s.T;
  float* Gi = G + (bh * s.T + i) * s.T;
  int64_t first, end;
  visible_keys(s, i, &first, &end);
  const int warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t j = first + warp; j < end; j += warps) {
    const float g = cuda::warp_dot(dOi, vb + j * s.ld_kv, s.D);
    if ((threadIdx.x & 31) == 0) Gi[j] = g;
  }
  __syncthreads();
  float dot = 0.0f;
  for (int64_t j = first + threadIdx.x; j < end; j += blockDim.x) dot += P[j] * Gi[j];
  dot = cuda::block_sum(dot, scratch);
  for (int64_t j = threadIdx.x; j < s.T; j += blockDim.x)
    if (j >= first && j < end) Gi[j] = P[j] * (Gi[j] - dot);
    else Gi[j] = 0.0f;
  __syncthreads();
  for (int64_t d = threadIdx.x; d < s.D; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = first; j < end; ++j) acc += Gi[j] * kb[j * s.ld_kv + d];
    dq[(b * s.T + i) * s.ld_q + h * s.D + d] = s.scale * acc;
  }
}

// blind[b, i] = 1 where every key query i sees is padding (bidirectional rows only: they took
// the mean of every value row). One thread per (b, i).
__global__ void blind_rows_kernel(int32_t* blind, CausalShape s, int64_t B) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < B * s.T; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = e / s.T, i = e % s.T;
    int64_t first, end;
    visible_keys(s, i, &first, &end);
    bool any = false;
    for (int64_t j = first; j < end && !any; ++j) any = s.mask[b * s.mask_stride + j] != 0;
    blind[e] = any ? 0 : 1;
  }
}

// One block per (key row j, pair bk = b*KVH + kvh): the key/value head's gradients summed over
// its query group's heads, in head order, and over the queries that see key j, in order:
// dV_j = Σ P[i, j] dO_i (+ dO_i / T for each blind row i), dK_j = scale Σ G[i, j] q_i. Written.
__global__ void causal_key_grad_kernel(float* dk, float* dv, const float* probs, const float* G, const float* dout,
                                       const float* q, const int32_t* blind, CausalShape s) {
  const int64_t j = blockIdx.x, bk = blockIdx.y, b = bk / s.KVH, kvh = bk % s.KVH, group = s.H / s.KVH;
  int64_t lo, hi;
  seeing_queries(s, j, &lo, &hi);
  for (int64_t d = threadIdx.x; d < s.D; d += blockDim.x) {
    float av = 0.0f, ak = 0.0f;
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = kvh * group + g, bh = b * s.H + h;
      const float* dO = dout + b * s.T * s.ld_out + h * s.D + d;  // channel d of row 0
      const float* qh = q + b * s.T * s.ld_q + h * s.D + d;
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t index = (bh * s.T + i) * s.T + j;
        av += probs[index] * dO[i * s.ld_out];
        ak += G[index] * qh[i * s.ld_q];
      }
      if (blind)
        for (int64_t i = 0; i < s.T; ++i)
          if (blind[b * s.T + i]) av += dO[i * s.ld_out] / float(s.T);
    }
    const int64_t row = b * s.batch_stride_kv + j * s.ld_kv + kvh * s.D + d;
    dv[row] = av;
    dk[row] = s.scale * ak;
  }
}

CausalShape causal_shape(const int32_t* mask, const CausalAttentionArgs& a) {
  check(a.past == 0 && a.H % a.KVH == 0, "causal_attention on CUDA: training runs whole sequences in query groups");
  CausalShape s;
  s.T = a.Tq, s.H = a.H, s.KVH = a.KVH, s.D = a.D;
  s.ld_q = a.ld_q, s.ld_kv = a.ld_kv, s.batch_stride_kv = a.batch_stride_kv, s.ld_out = a.ld_out;
  s.mask_stride = a.mask_stride, s.window = a.window, s.causal = a.causal, s.scale = a.scale, s.mask = mask;
  return s;
}

Tensor probs_scratch(int device, const CausalAttentionArgs& a) {
  return Tensor::empty({a.B, a.H, a.Tq, a.Tq}, DType::f32, Device::cuda(device), MemoryCategory::workspace);
}

}  // namespace

void causal_attention_forward_train_cuda(int device, float* out, float* probs, const float* q, const float* k,
                                         const float* v, const int32_t* key_mask, const CausalAttentionArgs& a) {
  const CausalShape s = causal_shape(key_mask, a);
  Tensor scratch = probs ? Tensor() : probs_scratch(device, a);
  float* P = probs ? probs : scratch.data<float>();
  causal_probs_kernel<<<cuda::rows_by_heads(a.Tq, a.B * a.H, "causal_attention"), kThreads, 0, cuda::stream(device)>>>(
      out, P, q, k, v, s);
  cuda::check_launch("causal_probs_kernel");
}

void causal_attention_backward_cuda(int device, float* dq, float* dk, float* dv, const float* dout, const float* probs,
                                    const float* q, const float* k, const float* v, const int32_t* key_mask,
                                    const CausalAttentionArgs& a) {
  const char* op = "causal_attention_backward";
  const CausalShape s = causal_shape(key_mask, a);
  const cudaStream_t stream = cuda::stream(device);
  const Device dev = Device::cuda(device);
  Tensor recomputed;
  if (!probs) {  // the fused path: the forward's probabilities again, from q and k
    recomputed = probs_scratch(device, a);
    causal_probs_kernel<<<cuda::rows_by_heads(a.Tq, a.B * a.H, op), kThreads, 0, stream>>>(
        nullptr, recomputed.data<float>(), q, k, v, s);
    cuda::check_launch("causal_probs_kernel");
    probs = recomputed.data<float>();
  }
  const Tensor G = Tensor::empty({a.B, a.H, a.Tq, a.Tq}, DType::f32, dev, MemoryCategory::workspace);
  causal_score_grad_kernel<<<cuda::rows_by_heads(a.Tq, a.B * a.H, op), kThreads, 0, stream>>>(dq, G.data<float>(),
                                                                                              probs, dout, k, v, s);
  cuda::check_launch("causal_score_grad_kernel");
  Tensor blind;
  if (key_mask && !a.causal) {
    blind = Tensor::empty({a.B, a.Tq}, DType::i32, dev, MemoryCategory::workspace);
    blind_rows_kernel<<<cuda::grid_for(a.B * a.Tq, 128), 128, 0, stream>>>(blind.data<int32_t>(), s, a.B);
    cuda::check_launch("blind_rows_kernel");
  }
  causal_key_grad_kernel<<<cuda::rows_by_heads(a.Tq, a.B * a.KVH, op), kThreads, 0, stream>>>(
      dk, dv, probs, G.data<float>(), dout, q, blind.defined() ? blind.data<int32_t>() : nullptr, s);
  cuda::check_launch("causal_key_grad_kernel");
}

}  // namespace tach::ops
