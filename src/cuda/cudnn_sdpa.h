// Scaled dot-product attention through cuDNN 9's fused flash-attention engines, for training in
// bf16 or f16: a forward that saves each query row's softmax statistics, and the backward that
// recomputes the probabilities from them.
//
// cuDNN is reached through its backend (graph) API, dlopen-loaded (cuda/cudnn_loader.h). The graph
// is the one cuDNN's fused attention engines recognise, built from primitive operations:
//   forward:  S = (Q·Kᵀ) * scale, masked to -inf (key padding, causal), Stats = max + log(sum exp),
//             P = softmax(S) [∘ M / (1 - p): dropout] in the input dtype, O = P·V
//   backward: sum_i = rowsum(dO ∘ O) [· (1 - p)], P = exp(S - Stats), dV = (P [∘ M / (1 - p)])ᵀ·dO,
//             dS = P ∘ (dO·Vᵀ [∘ M] - sum_i) [/ (1 - p)] * scale, dK = dSᵀ·Q, dQ = dS·K (accumulated by
//             cuDNN in an f32 buffer)
// Grouped-query K/V (fewer K/V heads than query heads): Q's head h reads K/V head h / (H / H_kv),
// as cudnn-frontend writes it: the scores' GEMMs broadcast K and V over each group, and dK, dV are
// computed per query head ([B, H, T, D], never in memory) and summed over each group by a reduction.
// Dropout takes the caller's keep mask M (0 or 1 per probability), so the fused engines drop what
// tach's own kernels drop: cuDNN's other dropout (its Philox generator) draws different masks.
// Each shape's graph, engine and plan are built once per device and cached; a call then only
// executes the plan on tach's stream.
#pragma once

#include <cstdint>
#include <string>

namespace tach::cuda {

enum class SdpaDType { bf16, f16 };
const char* sdpa_dtype_name(SdpaDType t);

struct SdpaArgs {
  int64_t B = 0, T = 0, H = 0, D = 0;  // batch, tokens (queries = keys), query heads, head size
  int64_t H_kv = 0;                    // key/value heads: 0 (= H), or a divisor of H (grouped-query)
  int64_t ld_in = 0;                   // row stride in elements of q and dq (>= H*D); of k, v too unless ld_kv
  int64_t ld_kv = 0;                   // row stride in elements of k, v, dk, dv (>= H_kv*D); 0: ld_in
  int64_t ld_out = 0;                  // row stride in elements of out and dout (>= H*D)
  // k's and v's batch stride in elements: 0 (T * kv_stride(): each sequence's rows after the
  // last's), or more (a decoder's key/value cache holds each sequence `capacity` rows apart).
  // Forward only.
  int64_t kv_batch_stride = 0;
  float scale = 1.0f;   // on q·kᵀ, usually 1/sqrt(D)
  bool causal = false;  // query i sees keys j <= i
  // > 0: dropout on the probabilities with the caller's keep mask (sdpa_forward's dropout_mask),
  // the kept ones scaled by 1 / (1 - dropout_p). In [0, 1).
  float dropout_p = 0.0f;
  SdpaDType dtype = SdpaDType::bf16;
  // The inference forward's masks (stats null; ops/infer_attention_kernel.h says which cuDNN
  // versions take them):
  // window > 0: a sliding window, the diagonal band cudnn-frontend builds: causal, query i sees
  // keys (i - window, i] (its left bound); bidirectional, keys j with |i - j| <= window (both).
  int64_t window = 0;
  // A bias added to the scaled scores before the masks: [1, H, T, T] in `dtype`, contiguous
  // (MPNet's relative positions, looked up once per call).
  bool bias = false;
  // Left padding: each sequence's rows start at its first real token. cuDNN's padding mask knows
  // only lengths (real keys first), so q, k, v and out get ragged offsets (SdpaMaskInputs) that
  // start each sequence there, and kv_lengths its real tokens, for queries and keys alike: the
  // causal diagonal and the window then hold between real positions. Rows before the first real
  // token are not written. Needs kv_lengths.
  bool ragged = false;

  int64_t kv_heads() const { return H_kv > 0 ? H_kv : H; }
  int64_t kv_stride() const { return ld_kv > 0 ? ld_kv : ld_in; }
  int64_t kv_batch() const { return kv_batch_stride > 0 ? kv_batch_stride : T * kv_stride(); }
};

// Device memory the inference forward's masks read, as SdpaArgs asks for them.
struct SdpaMaskInputs {
  const void* bias = nullptr;  // [1, H, T, T] in the args' dtype (args.bias)
  // [B + 1] i32 each (args.ragged): element offsets of each sequence's first real row in q, in k
  // and v, and in out; the last entry past the end.
  const int32_t *q_offsets = nullptr, *kv_offsets = nullptr, *out_offsets = nullptr;
};

// Whether cuDNN's fused attention can be used here (cuDNN 9 loads); *why says what is missing.
bool cudnn_sdpa_available(std::string* why = nullptr);

// q: [B, T, H*D], k, v: [B, T, H_kv*D] in args.dtype, rows strided by ld_in (q) and kv_stride()
// (k, v): column blocks of one fused [B, T, (H + 2 H_kv) D] buffer work as they are; 16-byte aligned.
// kv_lengths: [B] i32 on the device: key j of sequence b is real when j < kv_lengths[b] (right
// padding, every length in [1, T]), or null: every key is real. Every query row is answered,
// padded ones too (over the real keys), as transformers' additive key mask does.
// out: [B, T, H*D] in args.dtype, row stride ld_out, overwritten.
// stats: [B, H, T] f32, overwritten: per query row, max + log(sum(exp(s - max))) of its scaled,
// masked scores (the log-sum-exp), which the backward needs; or null (inference): a graph without
// it (cudnn-frontend's generate_stats = false), cached apart from the training one.
// dropout_mask: [B, H, T, T] contiguous in args.dtype, 1 where the probability is kept, 0 where
// dropped (the stats are those of the probabilities before dropout), when args.dropout_p > 0;
// null otherwise.
// Runs on tach's stream of `device`; no host synchronisation except the first call of a shape.
// masks: what args.bias and args.ragged read (inference only).
void sdpa_forward(int device, const SdpaArgs& a, void* out, float* stats, const void* q, const void* k, const void* v,
                  const int32_t* kv_lengths, const void* dropout_mask = nullptr, const SdpaMaskInputs& masks = {});

// dout: [B, T, H*D] row stride ld_out; out and stats: what sdpa_forward wrote for these q, k, v
// (and this dropout_mask). dq: as q, dk, dv: as k, v (column blocks of one fused gradient),
// written, not accumulated; each K/V head's gradient sums its query group's. Padded keys get
// zero dk and dv.
void sdpa_backward(int device, const SdpaArgs& a, void* dq, void* dk, void* dv, const void* dout, const void* out,
                   const float* stats, const void* q, const void* k, const void* v, const int32_t* kv_lengths,
                   const void* dropout_mask = nullptr);

// Builds and finalizes every tensor and operation descriptor of the graph for these arguments
// (padded: with kv_lengths; grouped-query K/V and dropout as `a` says; stats false: the inference
// forward, without the log-sum-exp), and with cuDNN 9.19 or later the operation graph itself, without a
// device: cuDNN checks each operation's attributes and the graph's connections, so a machine
// without a GPU checks the graph a GPU would run (choosing an engine needs the GPU). Throws what
// cuDNN refused.
void sdpa_check_operations(const SdpaArgs& a, bool padded, bool backward, bool stats = true);

}  // namespace tach::cuda
