// The training attention of a bf16 step through cuDNN's fused flash attention (cuda/cudnn_sdpa.h),
// for both attention ops (encoders' attention, decoders' causal_attention), and the inference
// forward of a bf16 or f16 model (ops/infer_attention_kernel.h chooses it) through the same graph
// cache, without the log-sum-exp: with bf16/f16 activations q, k, v and out go to cuDNN as they
// are; with f32 ones through the training's packing. The step keeps f32
// activations and rounds each GEMM's inputs to bf16 (torch.autocast's mixed precision), so here q,
// k and v are rounded to bf16 once, into one packed [N, (H + 2 KVH) D] buffer, the output comes
// back to f32, and so do the gradients: one conversion kernel each way. Compiled with CUDA only.
//
// Saved for the backward: each query row's log-sum-exp (stats [B, H, T] f32) beside the f32 output
// the step keeps anyway (the output projection's input), which holds cuDNN's bf16 O exactly. The
// backward rounds q, k, v and dout again and lets cuDNN recompute the probabilities.
#pragma once

#include <cstdint>

#include "tach/dtype.h"

namespace tach::ops {

struct CudnnAttention {
  int device = 0;
  int64_t B = 0, T = 0, H = 0, KVH = 0, D = 0;  // queries = keys = T per row; KVH divides H
  // q: [B*T, H*D] rows of stride ld_q; k, v: [B*T, KVH*D] rows of stride ld_kv, in `activations`
  // (f32 for training), on `device`.
  const void *q = nullptr, *k = nullptr, *v = nullptr;
  int64_t ld_q = 0, ld_kv = 0;
  // k's and v's batch stride: 0 (T * ld_kv: each sequence's rows after the last's), or more (a
  // decoder's key/value cache holds each sequence's rows `capacity` rows apart).
  int64_t kv_batch_stride = 0;
  int64_t ld_out = 0;  // out's and dout's row stride ([B*T, H*D])
  // [B, T] i32, right-padded (ones, then zeros: the rows tach's collator builds), or null: every
  // key real. Every query row is answered over its row's real keys. Rows mask_stride apart (0: T).
  const int32_t* key_mask = nullptr;
  int64_t mask_stride = 0;
  bool causal = false;
  float scale = 1.0f;
  // Dropout on the probabilities with ops/dropout's mask over element ((b*H + h)*T + i)*T + j: the
  // mask tach's own kernels (and the CPU's) draw for this key, given to cuDNN as its keep mask.
  float dropout_p = 0.0f;
  uint64_t dropout_key = 0;
  // What q, k, v and the output are rounded to: bf16 (training, bf16 models) or f16 (f16 models).
  DType dtype = DType::bf16;
  // The dtype q, k, v and out are in: f32 (packed and rounded to `dtype`, the output widened back),
  // or `dtype` itself (inference only: cuDNN reads and writes them in place, 16-byte aligned).
  DType activations = DType::f32;
  // Inference only (ops/infer_attention_kernel.h chose cuDNN for them):
  // a sliding window, as CausalAttentionArgs::window (0: none);
  int64_t window = 0;
  // MPNet's relative position bias (ops/attention.h's ScoreBias: bucket [T, T] i32, table
  // [buckets, H] f32), looked up into a [1, H, T, T] bias in `dtype` for the call;
  const int32_t* bias_bucket = nullptr;
  const float* bias_table = nullptr;
  // key_mask is left-padded (a causal prompt's): each row starts at its first real token through
  // ragged offsets; the rows of padding before it get zeros, as tach's causal kernels give them.
  bool left_padded = false;
};

// out: [B*T, H*D] f32 rows of stride ld_out, written. stats: [B, H, T] f32, written.
void cudnn_attention_forward(const CudnnAttention& a, float* out, float* stats);
// dout, out: [B*T, H*D] f32 (stride ld_out); stats: the forward's. dq: as q, dk, dv: as k, v
// (their row strides), written, not accumulated.
void cudnn_attention_backward(const CudnnAttention& a, float* dq, float* dk, float* dv, const float* dout,
                              const float* out, const float* stats);
// Inference: the forward alone, nothing saved (cuDNN's graph without the log-sum-exp), no dropout.
// out: [B*T, H*D] in a.activations, rows of stride ld_out, written.
void cudnn_attention_inference(const CudnnAttention& a, void* out);

}  // namespace tach::ops
