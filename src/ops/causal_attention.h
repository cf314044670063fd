// Self-attention with grouped-query heads (Qwen2, Llama): H query heads share KVH key/value
// heads in groups of H/KVH, a query sees the keys at or before its own position (or the last
// `window` of them), and padded keys are masked. The same kernel serves a whole prompt and one
// decoding step against a key/value cache, and ModernBERT's bidirectional layers (causal off: a
// query sees every key, or those within `window` on either side). Blocks of query rows compute
// only the scores of the keys they see, so a sliding layer's cost grows linearly with the length.
#pragma once

#include "ops/infer_attention_kernel.h"
#include "ops/op_cost.h"
#include "tach/device.h"
#include "tach/tensor.h"

namespace tach::ops {

struct CausalAttentionArgs {
  int64_t B = 0, Tq = 0;  // batch, queries per row
  int64_t past = 0;       // query i of a row sits at key index past + i (0 for a whole prompt)
  int64_t H = 0, KVH = 0, D = 0;
  // q: [B, Tq, H*D] rows of stride ld_q (batch stride Tq*ld_q)
  // k, v: [B, past + Tq, KVH*D] rows of stride ld_kv, batch stride batch_stride_kv
  // key_mask: [B, mask_stride] i32, 1 = real token, 0 = padding (left-padded prompts); null = all real
  // out: [B, Tq, H*D] rows of stride ld_out
  int64_t ld_q = 0, ld_kv = 0, batch_stride_kv = 0, ld_out = 0, mask_stride = 0;
  float scale = 1.0f;
  // A sliding window: the query at key index P sees keys (P - window, P] only, as transformers'
  // sliding_window mask (kv > q - window, on cache indices); 0 = every earlier key. Bidirectional:
  // keys with |P - j| <= window, as transformers' bidirectional sliding-window mask.
  int64_t window = 0;
  bool causal = true;  // false: bidirectional (ModernBERT)
  // Decoding under a captured CUDA graph: `past` read by the kernel from this one i32 in device
  // memory, so that one capture serves every step; `past` is then the most it can be (it sizes
  // the split of the keys and the cost). CUDA and causal only.
  const int32_t* device_past = nullptr;
  Device device = Device::cpu();  // where every pointer lives
  // The element dtype of q, k, v and out (the key/value cache too): f32, or on CUDA bf16 or f16
  // (the activation contract: loaded as it, scores and softmax in f32, each output rounded once).
  // Inference only; training's operands are f32.
  DType dtype = DType::f32;
  // Inference on CUDA: the model's GEMM dtype and its batch's padding, which choose between cuDNN's
  // fused attention and tach's kernels (ops/infer_attention_kernel.h). Training ignores them.
  InferAttentionFacts facts;
};

// The keys the query at row i of this call sees: [first, end), in key (cache) indices.
struct KeyRange {
  int64_t first, end;
};
KeyRange key_range(const CausalAttentionArgs& a, int64_t i);
// The query rows the kernel computes as one block: 64, or (the forward) every row when there are
// 128 or fewer.
int64_t attention_row_block(const CausalAttentionArgs& a, bool backward);
// The scores the kernel computes for one (row, head): each block of query rows against the keys
// its rows see together. What the costs count.
int64_t attention_scores_computed(const CausalAttentionArgs& a, bool backward = false);

// A causal query whose every visible key is padding (a pad position of a left-padded row) gets
// zeros: no real token reads it, since real queries never see padded keys. A bidirectional one
// gets the mean of every value row, as transformers' softmax over scores that all round to
// finfo.min gives (ModernBERT's first-token pooling reads it when a row is left-padded); its
// gradient reaches the values only.
// The op (span, cost) around the kernel; inference keeps no probabilities. q, k, v and out hold
// a.dtype elements. On CUDA a bf16 or f16 model's prefill (past = 0, more than one query, no
// window shorter than the keys, no left padding: a.facts) runs cuDNN's fused attention where
// ops/infer_attention_kernel.h chooses it: on bf16/f16 operands in place, on f32 ones through q,
// k, v rounded to the model's dtype and the output back to f32; tach's kernels run the rest in
// a.dtype. The span's detail names the kernel and its dtype.
void causal_attention_forward(void* out, const void* q, const void* k, const void* v, const int32_t* key_mask,
                              const CausalAttentionArgs& a);
// f32 operands (a.dtype must be f32).
void causal_attention_forward(float* out, const float* q, const float* k, const float* v, const int32_t* key_mask,
                              const CausalAttentionArgs& a);
OpCost causal_attention_cost(const CausalAttentionArgs& a);

// Training (past = 0, Tq = Tk = T, N = B*T rows): as the forward, for a.B rows of a.Tq tokens
// with a's heads, scale, window and causality; where the operands live and their row strides
// are the tensors' own, so the caller's a.past, a.ld_*, a.batch_stride_kv, a.mask_stride and
// a.device are ignored (the op sets them).
//   q: [N, H*D] f32  k, v: [N, KVH*D] f32: rows of any stride (k's and v's the same), columns
//      contiguous: e.g. views of the fused q|k|v [N, (H + 2 KVH) D]: qkv.narrow(1, 0, H*D), ...
//   key_mask: [B, T] i32 contiguous (1 = real token), or undefined: every key is real
//   out: [N, H*D] f32, rows of any stride
//   probs: [B, H, T, T] f32 contiguous, saved for the backward (zero where masked); undefined
//      (--exec fused): nothing is saved and the backward recomputes them from q and k.
//      [B, H, T] f32 (ops/train_attention_kernel.h chose cuDNN, CUDA only): cuDNN's bf16 fused
//      attention runs (ops/attention_cudnn.h) and saves each query row's log-sum-exp; no sliding
//      window shorter than the rows, key_mask right-padded (the rows tach's collator builds).
void causal_attention_forward_train(const Tensor& out, const Tensor& probs, const Tensor& q, const Tensor& k,
                                    const Tensor& v, const Tensor& key_mask, CausalAttentionArgs a);
// Backward. dout: [N, H*D] (rows of any stride)  dq: as q, dk, dv: as k, v (the same row
// strides as q's and k's): written, not accumulated; each key/value head sums the gradients of
// its query group. probs: the forward's, or undefined to recompute them. out: the forward's output
// (dout's row stride), which cuDNN's backward reads (probs [B, H, T]); the other kernels do not.
void causal_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                               const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& key_mask, CausalAttentionArgs a, const Tensor& out = Tensor());
OpCost causal_attention_backward_cost(const CausalAttentionArgs& a);

// Kernels.
void causal_attention_forward_cpu(float* out, float* probs, const float* q, const float* k, const float* v,
                                  const int32_t* key_mask, const CausalAttentionArgs& a);
void causal_attention_backward_cpu(float* dq, float* dk, float* dv, const float* dout, const float* probs,
                                   const float* q, const float* k, const float* v, const int32_t* key_mask,
                                   const CausalAttentionArgs& a);

// CUDA kernel (inference): as causal_attention_forward_cpu without probabilities, fused with an
// online softmax; q, k, v and out in a.dtype, every pointer on a.device. Returns which of tach's
// kernels ran.
TachAttentionKernel causal_attention_forward_cuda(int device, void* out, const void* q, const void* k, const void* v,
                                                  const int32_t* key_mask, const CausalAttentionArgs& a);
// CUDA kernels for training: as causal_attention_forward_cpu and causal_attention_backward_cpu
// (past = 0; one block per query row, and per key row for dK and dV, the probabilities and score
// gradients in device memory; probs null: a scratch, recomputed by the backward).
void causal_attention_forward_train_cuda(int device, float* out, float* probs, const float* q, const float* k,
                                         const float* v, const int32_t* key_mask, const CausalAttentionArgs& a);
void causal_attention_backward_cuda(int device, float* dq, float* dk, float* dv, const float* dout, const float* probs,
                                    const float* q, const float* k, const float* v, const int32_t* key_mask,
                                    const CausalAttentionArgs& a);

}  // namespace tach::ops
