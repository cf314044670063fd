// Scaled dot-product attention through cuDNN 9's fused flash-attention engines, for training in
// bf16 or f16: a forward that saves each query row's softmax statistics, and the backward that
// recomputes the probabilities from them.
//
// cuDNN is reached through its backend (graph) API, dlopen-loaded (cuda/cudnn_loader.h). The graph
// is the one cuDNN's fused attention engines recognise, built from primitive operations:
//   forward:  S = (Q·Kᵀ) * scale, masked to -inf (key padding, causal), Stats = max + log(sum exp),
//             P = softmax(S) in the input dtype, O = P·V
//   backward: sum_i = rowsum(dO ∘ O), P = exp(S - Stats), dV = Pᵀ·dO, dS = P ∘ (dO·Vᵀ - sum_i) * scale,
//             dK = dSᵀ·Q, dQ = dS·K (accumulated by cuDNN in an f32 buffer)
// Each shape's graph, engine and plan are built once per device and cached; a call then only
// executes the plan on tach's stream.
#pragma once

#include <cstdint>
#include <string>

namespace tach::cuda {

enum class SdpaDType { bf16, f16 };
const char* sdpa_dtype_name(SdpaDType t);

struct SdpaArgs {
  int64_t B = 0, T = 0, H = 0, D = 0;  // batch, tokens (queries = keys), heads, head size
  int64_t ld_in = 0;                   // row stride in elements of q, k, v and of dq, dk, dv (>= H*D)
  int64_t ld_out = 0;                  // row stride in elements of out and dout (>= H*D)
  float scale = 1.0f;                  // on q·kᵀ, usually 1/sqrt(D)
  bool causal = false;                 // query i sees keys j <= i
  SdpaDType dtype = SdpaDType::bf16;
};

// Whether cuDNN's fused attention can be used here (cuDNN 9 loads); *why says what is missing.
bool cudnn_sdpa_available(std::string* why = nullptr);

// q, k, v: [B, T, H*D] in args.dtype, rows strided by ld_in (column blocks of one fused
// [B, T, 3*H*D] buffer work as they are); 16-byte aligned.
// kv_lengths: [B] i32 on the device: key j of sequence b is real when j < kv_lengths[b] (right
// padding, every length in [1, T]), or null: every key is real. Every query row is answered,
// padded ones too (over the real keys), as transformers' additive key mask does.
// out: [B, T, H*D] in args.dtype, row stride ld_out, overwritten.
// stats: [B, H, T] f32, overwritten: per query row, max + log(sum(exp(s - max))) of its scaled,
// masked scores (the log-sum-exp), which the backward needs.
// Runs on tach's stream of `device`; no host synchronisation except the first call of a shape.
void sdpa_forward(int device, const SdpaArgs& a, void* out, float* stats, const void* q, const void* k, const void* v,
                  const int32_t* kv_lengths);

// dout: [B, T, H*D] row stride ld_out; out and stats: what sdpa_forward wrote for these q, k, v.
// dq, dk, dv: [B, T, H*D] row stride ld_in (column blocks of one [B, T, 3*H*D] gradient),
// written, not accumulated. Padded keys get zero dk and dv.
void sdpa_backward(int device, const SdpaArgs& a, void* dq, void* dk, void* dv, const void* dout, const void* out,
                   const float* stats, const void* q, const void* k, const void* v, const int32_t* kv_lengths);

// Builds and finalizes every tensor and operation descriptor of the graph for these arguments
// (padded: with kv_lengths), and with cuDNN 9.19 or later the operation graph itself, without a
// device: cuDNN checks each operation's attributes and the graph's connections, so a machine
// without a GPU checks the graph a GPU would run (choosing an engine needs the GPU). Throws what
// cuDNN refused.
void sdpa_check_operations(const SdpaArgs& a, bool padded, bool backward);

}  // namespace tach::cuda
