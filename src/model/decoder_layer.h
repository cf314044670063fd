// One decoder layer's forward, written once for inference and training: every family's pre-norm
// layer (attention norm, q|k|v, q/k norms, RoPE, causal attention, o, the sandwich norm, the
// residual add with the MLP norm, gate|up, the gate, down, the sandwich norm, the residual add),
// and ModernBERT's bidirectional one (LayerNorms, layer 0 without an attention norm).
// The two callers differ only in how a linear and the attention run, and in what they keep:
// - inference (model/decoder.cc): packed weights on any device, a key/value cache, one scratch
//   set shared by every layer, and the next layer's norm fused into each layer's last add;
// - training (train/trainable_decoder_step.cc): f32 masters or NF4 with LoRA, saved
//   probabilities, and every layer's own tensors, kept for its backward, which walks these
//   same steps in reverse.
#pragma once

#include <cstddef>

#include "model/decoder_config.h"
#include "ops/causal_attention.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "tach/tensor.h"

namespace tach::model {

enum class DecoderLinear { qkv, o, gate_up, down };
enum class DecoderNorm { attn, q, k, attn_out, mlp, mlp_out };

// The tensors of one layer for N = B*T rows. Training gives each layer its own and defines the
// saved-only ones (rstd*, qk_*, probs when eager); inference gives every layer the same scratch,
// leaves those undefined, and makes resid, resid_mid and resid_out one tensor updated in place.
struct DecoderLayerTensors {
  Tensor resid;      // [N, C] the residual stream entering the layer
  Tensor rstd1;      // [N] the attention norm's 1/rms, or 1/std (training)
  Tensor mean1;      // [N] its mean (training, LayerNorm: ModernBERT)
  Tensor x1;         // [N, C] the attention norm's output
  Tensor qk_raw;     // [N, (H + KVH) D] q, then k, before their norms (training, qk_norm)
  Tensor qk_rstd;    // [N, H + KVH] (training, qk_norm)
  Tensor qkv;        // [N, (H + 2 KVH) D] after the projection, q/k norms and RoPE
  Tensor probs;      // [B, H, T, T] (eager training only)
  Tensor context;    // [N, H D]
  Tensor attn_out;   // [N, C] o's output before its norm (sandwich norms)
  Tensor rstd_ao;    // [N] (training, sandwich norms)
  Tensor resid_mid;  // [N, C] resid + attention: the MLP norm's input
  Tensor rstd2;      // [N] (training)
  Tensor mean2;      // [N] (training, LayerNorm)
  Tensor x2;         // [N, C] the MLP norm's output
  Tensor gate_up;    // [N, 2I]
  Tensor act;        // [N, I] act(gate) * up
  Tensor mlp_out;    // [N, C] down's output before its norm (sandwich norms)
  Tensor rstd_mo;    // [N] (training, sandwich norms)
  Tensor branch;     // [N, C] scratch: a branch's output as it is added to the stream
  Tensor resid_out;  // [N, C] resid_mid + MLP: the next layer's resid
};

// The RoPE tables of one call's positions, shared by every layer: the global one and, for Gemma
// 3, the sliding layers' local one.
struct DecoderRope {
  ops::RopeTable global, local;
  const ops::RopeTable& of(const DecoderConfig& c, size_t layer) const {
    return c.has_local_rope && c.layer_window[layer] > 0 ? local : global;
  }
};
// positions: [N] i32 on the host, each below `length`; the tables go to `device`.
DecoderRope decoder_rope(const DecoderConfig& c, const Tensor& positions, int64_t length, Device device);

// The steps where inference and training differ.
class DecoderLayerRunner {
 public:
  virtual ~DecoderLayerRunner() = default;
  // out [N, rows] = in [N, cols] · Wᵀ (+ b), with LoRA's update where training has one.
  virtual void linear(size_t layer, DecoderLinear site, Tensor& out, const Tensor& in) = 0;
  // context [N, H D] from t.qkv (q, k and v after RoPE). `args` has everything but where the
  // keys, values and mask are: inference reads its cache, training saves t.probs.
  virtual void attention(size_t layer, ops::CausalAttentionArgs args, DecoderLayerTensors& t) = 0;
  // True where attention() rotates q and k itself as it appends the keys to its cache (decoding on
  // a GPU: ops::rope_kv_append, one kernel for the two), so decoder_qkv leaves them unrotated.
  virtual bool rope_in_attention() const { return false; }
  // A norm's weight as the forward applies it (Gemma's 1 + w): [C] or [D] f32, on the model's device.
  virtual const Tensor& norm(size_t layer, DecoderNorm which) const = 0;
  // out [N, C] = (act(gate) · up) · Wdownᵀ from t.gate_up [N, 2I]. By default the gate op into
  // t.act, then linear(down): training keeps act for its backward. Inference fuses the two where
  // its GEMV can (ops::linear_forward_gated), with the same numbers.
  virtual void gated_down(size_t layer, ops::GateActivation act, Tensor& out, DecoderLayerTensors& t) {
    ops::silu_gate_forward(t.act, t.gate_up, act);
    linear(layer, DecoderLinear::down, out, t.act);
  }
};

// How a layer starts and ends. The attention norm is computed here unless the previous layer's
// last add already wrote t.x1 (input_normed). With next_norm, the last add also norms its result
// into next_x (inference: the next layer's attention norm, or the final norm); without, it is
// a plain add (training, which keeps each layer's input norm inside the layer so that gradient
// checkpointing can recompute it).
struct DecoderLayerEnds {
  bool input_normed = false;
  const Tensor* next_norm = nullptr;  // [C] f32, as applied
  Tensor next_x;                      // [N, C]
};

// Layer l's attention over q|k|v rows of one fused buffer, for B rows of T new tokens: all but
// where the keys, values and mask are (the runner's part). The backward builds the same.
ops::CausalAttentionArgs decoder_attention_args(const DecoderConfig& c, size_t l, int64_t B, int64_t T, Device device);

// One layer, from t.resid to t.resid_out. B, T: the call's batch and new tokens (N = B*T).
// It runs these steps: the attention norm, decoder_qkv, the runner's attention,
// decoder_attention_output, decoder_mlp_block. (Inference's head-rows last layer runs them too,
// with the rows gathered between: model/decoder.cc.)
void decoder_layer_forward(const DecoderConfig& c, size_t layer, int64_t B, int64_t T, const DecoderRope& rope,
                           DecoderLayerTensors& t, DecoderLayerRunner& run, const DecoderLayerEnds& ends);

// t.qkv [N, (H + 2 KVH) D] = x1 · Wqkvᵀ, then the q/k norms and RoPE at each row's position.
void decoder_qkv(const DecoderConfig& c, size_t layer, int64_t B, int64_t T, const DecoderRope& rope,
                 DecoderLayerTensors& t, DecoderLayerRunner& run);
// The branch o [N, C] = context · Woᵀ (and Gemma's norm on it) into t.branch.
void decoder_attention_output(const DecoderConfig& c, size_t layer, DecoderLayerTensors& t, DecoderLayerRunner& run);
// The rest of the layer: resid_mid = resid + t.branch, the MLP norm, gate|up, the gate, down (and
// its norm), resid_out = resid_mid + MLP, normed into ends.next_x when ends.next_norm is given.
void decoder_mlp_block(const DecoderConfig& c, size_t layer, DecoderLayerTensors& t, DecoderLayerRunner& run,
                       const DecoderLayerEnds& ends);

// The family's norm: x += delta when delta is given (x updated in place), then out = norm(x): an
// RMSNorm, or ModernBERT's LayerNorm without bias. out must not alias x. mean (LayerNorm only)
// and rstd: [N] saved for training, or undefined.
void decoder_norm(const DecoderConfig& c, Tensor& out, Tensor& x, const Tensor& delta, const Tensor& weight,
                  const Tensor& mean = Tensor(), const Tensor& rstd = Tensor());

// The embedding the layers start from: h [N, C] = table[ids] (× Gemma's scale when not 0).
// ids: [B, T] i32 on h's device  table: [V, C] as stored.
void decoder_embed(Tensor& h, const Tensor& ids, const Tensor& table, float scale);

}  // namespace tach::model
