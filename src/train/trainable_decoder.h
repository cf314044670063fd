// Any decoder family's sequence classifier set up for training (…ForSequenceClassification):
// its parameters under their Hugging Face names (from the family row), a forward that keeps each
// layer's activations, and the backward (trainable_decoder_step.cc). The switches are
// DecoderConfig's, the same the inference forward (model/decoder.cc) reads. The head reads the
// last non-pad token of each row, as transformers' does.
#pragma once

#include <map>
#include <vector>

#include "model/decoder.h"
#include "model/decoder_config.h"
#include "model/family.h"
#include "model/weight_binder.h"
#include "train/trainable_model.h"

namespace tach::train {

struct TrainableDecoderLayer {
  Parameter* attn_norm;                   // [C]
  Parameter* q_norm = nullptr;            // [D] qk_norm only
  Parameter* k_norm = nullptr;            // [D]
  FusedTensor qkv_weight, qkv_bias;       // [(H + 2 KVH) D, C], [(H + 2 KVH) D] (bias: qkv_bias only)
  Parameter* o_proj;                      // [C, H D]
  Parameter* o_bias = nullptr;            // [C] o_bias only
  Parameter* attn_out_norm = nullptr;     // [C] sandwich norms only
  Parameter* mlp_norm;                    // [C]
  FusedTensor gate_up, gate_up_bias;      // [2I, C], [2I] (bias: mlp_bias only)
  Parameter* down;                        // [C, I]
  Parameter* down_bias = nullptr;         // [C] mlp_bias only
  Parameter* mlp_out_norm = nullptr;      // [C] sandwich norms only
  std::vector<int64_t> qkv_lora, o_lora, gate_up_lora, down_lora;  // LoRA adapters (train/lora.h)
};

struct DecoderActivations;

struct TrainableDecoder final : TrainableModel {
  model::DecoderConfig config;
  std::string body_prefix;          // "model."
  model::DecoderTensorNames names;  // the family's
  std::string classifier_architecture;
  float embed_scale = 0;            // Gemma: sqrt(C) (f32 master weights); 0 = none
  Parameter* embed = nullptr;       // [V, C]
  std::vector<TrainableDecoderLayer> layers;
  Parameter* final_norm = nullptr;  // [C]
  Parameter* score = nullptr;       // [L, C], no bias

  const std::vector<std::string>& labels() const override { return config.id2label; }
  std::string architecture() const override { return classifier_architecture; }
  bool uses_token_types() const override { return false; }
  std::vector<LinearSite> linear_sites() override;
  void release_frozen_grads() override;
  int64_t quantize_base_nf4() override;
  void layer_forward(DecoderActivations& a, size_t li, const int32_t* mask, const DropoutRates& dr) const;
  std::unique_ptr<ForwardState> new_state(bool fused) const override;
  void forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dropout) const override;
  void backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                const DropoutRates& dropout) override;

  // A norm's weight as applied: the parameter itself, or Gemma's 1 + w (refreshed by each forward).
  const float* norm_weight(const Parameter* p) const;

 private:
  void refresh_applied_norms() const;
  mutable std::map<const Parameter*, Tensor> applied_norms_;  // Gemma only
};

// A head the checkpoint lacks (a bare or causal-LM model, or a head of another size) is
// initialised as transformers does: N(0, initializer_range) from init_seed; notes says so.
TrainableDecoder build_trainable_decoder(const model::DecoderConfig& config, const model::ModelFamily& family,
                                         model::WeightBinder& binder, uint64_t init_seed,
                                         std::vector<std::string>* notes);

// What the forward keeps, per layer, for a [B, T] batch (N = B*T rows).
struct DecoderLayerActivations {
  Tensor resid_in;   // [N, C] the residual stream entering the layer (the attention norm's input)
  Tensor rstd1;      // [N]
  Tensor x1;         // [N, C] the attention norm's output
  Tensor qk_raw;     // [N, (H + KVH) D] q and k before their norms (qk_norm only)
  Tensor qk_rstd;    // [N, H + KVH] (qk_norm only)
  Tensor qkv;        // [N, (H + 2 KVH) D] after the projection, q/k norms and RoPE
  Tensor probs;      // [B, H, T, T] (eager only)
  Tensor context;    // [N, H D]
  Tensor attn_out;   // [N, C] o_proj's output before its norm (sandwich norms only)
  Tensor rstd_ao;    // [N]
  Tensor resid_mid;  // [N, C] resid_in + attention: the MLP norm's input
  Tensor rstd2;      // [N]
  Tensor x2;         // [N, C]
  Tensor gate_up;    // [N, 2I]
  Tensor act;        // [N, I] act(gate) * up
  Tensor mlp_out;    // [N, C] down's output before its norm (sandwich norms only)
  Tensor rstd_mo;    // [N]
};

struct DecoderActivations final : ForwardState {
  // fused: attention keeps no probabilities; the backward recomputes them.
  int64_t B = 0, T = 0;
  std::vector<DecoderLayerActivations> layers;
  Tensor resid_out;   // [N, C] the last layer's output: the final norm's input
  Tensor pooled_in;   // [B, C] the last layer's output at each row's last real token
  Tensor final_rstd;  // [B]
  Tensor pooled;      // [B, C] the final norm of pooled_in (the norm is per row, so only these rows are normed)
  std::vector<int64_t> last;  // per row, that token's position
  ops::RopeTable rope, local_rope;  // cos/sin of positions 0..T-1 for every row (local: Gemma 3's sliding layers)
  // Gradients, reused by the backward.
  Tensor d_resid, d_x, d_qkv, d_context, d_gate_up, d_act;  // [N, C] x2, [N, QKV], [N, HD], [N, 2I], [N, I]
  Tensor d_branch;                                          // [N, C] sandwich norms: d(branch before its norm)
  Tensor scratch;                                           // [N, C] a projection's output before its residual add
  Tensor d_pooled, d_pooled_in;                             // [B, C]
};

}  // namespace tach::train
