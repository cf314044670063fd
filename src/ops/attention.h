// Multi-head scaled dot-product attention for encoders (bidirectional, key padding mask).
#pragma once

#include <vector>

#include "ops/infer_attention_kernel.h"
#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// A bias on the scores that every sequence of the batch shares, looked up by bucket: MPNet's
// relative position bias, computed once and added in every layer.
// score(h, i, j) += table[bucket[i*T + j] * H + h], after the scale and before the key mask.
struct ScoreBias {
  const int32_t* bucket = nullptr;  // [T, T] i32, on the kernel's device
  const float* table = nullptr;     // [buckets, H] f32
  int64_t buckets = 0;
};

// MPNet's (and T5's bidirectional) relative position buckets for T tokens: [T, T] i32,
// bucket[i*T + j] for the key at j seen from the query at i, as transformers'
// relative_position_bucket: half the buckets for keys after the query, half of each half exact
// distances, the rest logarithmic up to max_distance (computed in f32, as there).
std::vector<int32_t> relative_position_buckets(int64_t T, int64_t buckets, int64_t max_distance);

// q, k, v: [B, T, H*D] in the activation dtype A, rows may be strided (views into one fused QKV
// buffer [B, T, 3*H*D]); key_mask: [B, T] i32 (1 = keep, 0 = padding) or undefined; out: [B, Tq,
// H*D] in A, contiguous. A is f32 on the CPU (bf16 or f16 there is the op's unsupported error),
// f32, bf16 or f16 on CUDA (the activation contract: loaded as A, scores and softmax in f32, the
// output rounded once to A); q, k, v and out share it.
// q may hold only the first Tq <= T rows of each sequence ([B, Tq, H*D], the same batch stride as
// k and v: a classifier's last layer asks for its first token only); out then has those rows.
// scores = q·kᵀ * scale, plus finfo(f32).min where the key is padding (Hugging Face's
// additive mask, so a fully padded row behaves as it does there), softmax over keys, · v.
// Inference keeps no probabilities; training calls attention_forward_train_cpu, which saves them.
// bias_table: [buckets, H] f32 with bias_buckets [T, T] i32 on the same device, or undefined.
// facts: the model's GEMM dtype and its batch's padding. On CUDA cuDNN's fused attention runs where
// ops/infer_attention_kernel.h chooses it: with A = bf16 or f16 on q, k, v and out as they are; with
// A = f32 for a bf16 or f16 model, q, k, v rounded to the model's dtype and the output back to f32.
// tach's kernels run the rest, in A; the span's detail names the kernel that ran and its dtype.
void attention_forward(Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                       int heads, float scale, const Tensor& bias_table = Tensor(),
                       const Tensor& bias_buckets = Tensor(), const InferAttentionFacts& facts = {});
// biased: a ScoreBias is added (one flop more per score). dtype: q's, k's, v's and out's (bytes).
OpCost attention_cost(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Tq = -1, bool biased = false,
                      DType dtype = DType::f32);

// Kernel. q/k/v row stride ld_in, out row stride ld_out (in floats). mask: [B, T] or null.
// Tq >= 0: the first Tq query rows of each sequence only (out: [B, Tq, H*D]); -1: all T.
void attention_forward_cpu(float* out, const float* q, const float* k, const float* v, const int32_t* mask, int64_t B,
                           int64_t T, int64_t H, int64_t D, int64_t ld_in, int64_t ld_out, float scale,
                           const ScoreBias& bias = {}, int64_t Tq = -1);

// Training forward: as attention_forward_cpu, and saves the softmax probabilities (before
// dropout) in probs: [B, H, T, T], zero at keys past a right-padded prefix. Dropout on the
// probabilities (attention_probs_dropout_prob) uses ops/dropout's mask with element index
// ((b*H + h)*T + i)*T + j; dropout_p = 0 turns it off. probs null (the fused path): nothing is
// saved, and the backward recomputes the probabilities from q and k (one GEMM per head more,
// B*H*T*T floats less per layer).
void attention_forward_train_cpu(float* out, float* probs, const float* q, const float* k, const float* v,
                                 const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                                 int64_t ld_out, float scale, float dropout_p, uint64_t dropout_key, int64_t Tq = -1,
                                 const ScoreBias& bias = {});
// Backward. dout: [B, T, H*D] (row stride ld_out)  probs: saved by the forward, or null to recompute.
// dq, dk, dv: [B, T, H*D] with row stride ld_in (column blocks of one [B, T, 3C] gradient),
// written, not accumulated.
void attention_backward_cpu(float* dq, float* dk, float* dv, const float* dout, const float* probs, const float* q,
                            const float* k, const float* v, const int32_t* mask, int64_t B, int64_t T, int64_t H,
                            int64_t D, int64_t ld_in, int64_t ld_out, float scale, float dropout_p,
                            uint64_t dropout_key, int64_t Tq = -1, const ScoreBias& bias = {}, float* d_bias = nullptr);
// d_bias: [B, H, buckets], written: each (sequence, head)'s score gradients summed per bucket (the
// caller sums over the batch, in order, into the table's gradient [buckets, H]).
// Tq >= 0: only the first Tq query rows of each sequence (a classifier's last layer reads the
// first token only): out and dq get those rows, dk and dv all keys. -1: all T.
OpCost attention_backward_cost(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Tq = -1);

// Training entry points. q: [B, Tq, C] where Tq = T, or fewer (the first rows of each sequence:
// a classifier's last layer reads its first token only); k, v: [B, T, C]; all three views with
// one row layout (row stride ld, batch stride T·ld: column blocks of one fused [B, T, 3C] buffer,
// e.g. qkv.narrow(2, C, C)) and unit column stride. out, dout: [B, Tq, C] with row stride ld_out
// and batch stride T·ld_out (the first Tq rows of each sequence of a [B, T, C] buffer).
// key_mask: [B, T] i32. bias_table [buckets, H] f32 with bias_buckets [T, T] i32 (MPNet's
// relative position bias), or both undefined. Every tensor on one device.
// "attention": saves the softmax probabilities (before dropout) in probs [B, H, T, T], or, with
// probs undefined (the fused path), nothing: the backward recomputes them from q and k. Dropout
// on the probabilities uses ops/dropout's mask over element ((b*H + h)*T + i)*T + j.
// probs [B, H, T] (ops/train_attention_kernel.h chose cuDNN, CUDA only): cuDNN's bf16 fused
// attention runs (ops/attention_cudnn.h) and saves each query row's log-sum-exp there; every
// query row (Tq = T), no score bias, key_mask right-padded; dropout with the same masks.
void attention_forward_train(const Tensor& out, const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& key_mask, int heads, float scale, float dropout_p, uint64_t dropout_key,
                             const Tensor& bias_table = Tensor(), const Tensor& bias_buckets = Tensor());
// "attention_backward": dq [B, Tq, C], dk, dv [B, T, C] written (not accumulated), with q's row
// layout. d_bias_table: [buckets, H] += the scores' gradient summed per bucket over the batch in
// order, through d_bias_parts [B, H, buckets] (scratch); both undefined for none (no bias, or a
// frozen one). out: the forward's output, which cuDNN's backward reads (probs [B, H, T]); the
// other kernels do not.
void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& d_bias_table,
                        const Tensor& d_bias_parts, const Tensor& dout, const Tensor& probs, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& key_mask, int heads, float scale,
                        float dropout_p, uint64_t dropout_key, const Tensor& bias_table = Tensor(),
                        const Tensor& bias_buckets = Tensor(), const Tensor& out = Tensor());

// Which CUDA attention kernel runs, for this op and causal_attention: the launcher's choice,
// or one forced (the gpu tests run every case through both).
enum class CudaAttentionKernel { automatic = 0, tiles = 1, rows = 2 };
void set_cuda_attention_kernel(CudaAttentionKernel kernel);
CudaAttentionKernel cuda_attention_kernel();

// CUDA kernel: as attention_forward_cpu, one fused pass with an online softmax (no [T, T]
// scores in memory); head sizes up to 256. q, k, v and out in `dtype` (f32, bf16 or f16), strides
// in elements; Tq >= 0: the first Tq query rows of each sequence only (out: [B, Tq, H*D]), -1: all
// T. Returns which of tach's kernels ran.
TachAttentionKernel attention_forward_cuda(int device, DType dtype, void* out, const void* q, const void* k,
                                           const void* v, const int32_t* mask, int64_t B, int64_t T, int64_t H,
                                           int64_t D, int64_t ld_in, int64_t ld_out, float scale,
                                           const ScoreBias& bias = {}, int64_t Tq = -1);
// f32 operands.
inline TachAttentionKernel attention_forward_cuda(int device, float* out, const float* q, const float* k,
                                                  const float* v, const int32_t* mask, int64_t B, int64_t T, int64_t H,
                                                  int64_t D, int64_t ld_in, int64_t ld_out, float scale,
                                                  const ScoreBias& bias = {}) {
  return attention_forward_cuda(device, DType::f32, out, q, k, v, mask, B, T, H, D, ld_in, ld_out, scale, bias);
}

// dst [B, rows, C] = the first `rows` of each sequence of src [B, T, C], both contiguous in `dtype`,
// on tach's stream of `device` (cuDNN answers every query row; a classifier's last layer reads
// the first).
void copy_first_rows_cuda(int device, DType dtype, void* dst, const void* src, int64_t B, int64_t rows, int64_t T,
                          int64_t C);

// CUDA kernels for training: as attention_forward_train_cpu and attention_backward_cpu (the same
// arguments; one block per query row, the probabilities and score gradients in device memory).
// The backward also does the entry point's sum: d_bias_table [buckets, H] += d_bias_parts summed
// over the batch in order (both null: no bias gradient). Head sizes up to 512.
void attention_forward_train_cuda(int device, float* out, float* probs, const float* q, const float* k, const float* v,
                                  const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                                  int64_t ld_out, float scale, float dropout_p, uint64_t dropout_key, int64_t Tq = -1,
                                  const ScoreBias& bias = {});
void attention_backward_cuda(int device, float* dq, float* dk, float* dv, float* d_bias_table, float* d_bias_parts,
                             const float* dout, const float* probs, const float* q, const float* k, const float* v,
                             const int32_t* mask, int64_t B, int64_t T, int64_t H, int64_t D, int64_t ld_in,
                             int64_t ld_out, float scale, float dropout_p, uint64_t dropout_key, int64_t Tq = -1,
                             const ScoreBias& bias = {});

}  // namespace tach::ops
