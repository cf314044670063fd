// A Qwen2 sequence classifier set up for training (Qwen2ForSequenceClassification): its
// parameters under their Hugging Face names, a forward that keeps each layer's activations, and
// the backward (trainable_qwen2_step.cc). The head reads the last non-pad token of each row, as
// transformers' does.
#pragma once

#include <vector>

#include "model/config.h"
#include "model/qwen2.h"
#include "model/weight_binder.h"
#include "train/trainable_model.h"

namespace tach::train {

struct TrainableQwen2Layer {
  Parameter* input_norm;            // [C]
  FusedTensor qkv_weight, qkv_bias;  // [(H + 2 KVH) D, C], [(H + 2 KVH) D]: q_proj, k_proj, v_proj stacked
  Parameter* o_proj;                // [C, H D], no bias
  Parameter* post_norm;             // [C]
  FusedTensor gate_up;              // [2I, C]: gate_proj, up_proj stacked
  Parameter* down;                  // [C, I]
  std::vector<int64_t> qkv_lora, o_lora, gate_up_lora, down_lora;  // LoRA adapters (train/lora.h)
};

struct Qwen2Activations;

struct TrainableQwen2 final : TrainableModel {
  model::Qwen2Config config;
  model::Qwen2Shape shape;
  Parameter* embed = nullptr;       // [V, C]
  std::vector<TrainableQwen2Layer> layers;
  Parameter* final_norm = nullptr;  // [C]
  Parameter* score = nullptr;       // [L, C], no bias

  const std::vector<std::string>& labels() const override { return config.id2label; }
  std::string architecture() const override { return "Qwen2ForSequenceClassification"; }
  bool uses_token_types() const override { return false; }
  std::vector<LinearSite> linear_sites() override;
  void release_frozen_grads() override;
  int64_t quantize_base_nf4() override;
  void layer_forward(Qwen2Activations& a, size_t li, const int32_t* mask, const DropoutRates& dr) const;
  std::unique_ptr<ForwardState> new_state(bool fused) const override;
  void forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dropout) const override;
  void backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                const DropoutRates& dropout) override;
};

// A head the checkpoint lacks (a Qwen2Model, or a head of another size) is initialised as
// transformers does: N(0, initializer_range) from init_seed; notes says so.
TrainableQwen2 build_trainable_qwen2(const model::Qwen2Config& config, model::WeightBinder& binder,
                                     uint64_t init_seed, std::vector<std::string>* notes);

// What the forward keeps, per layer, for a [B, T] batch (N = B*T rows).
struct Qwen2LayerActivations {
  Tensor resid_in;   // [N, C] the residual stream entering the layer (input_layernorm's input)
  Tensor rstd1;      // [N]
  Tensor x1;         // [N, C] input_layernorm's output
  Tensor qkv;        // [N, (H + 2 KVH) D] after the projection and RoPE
  Tensor probs;      // [B, H, T, T] (eager only)
  Tensor context;    // [N, H D]
  Tensor resid_mid;  // [N, C] resid_in + o_proj(context): post_attention_layernorm's input
  Tensor rstd2;      // [N]
  Tensor x2;         // [N, C]
  Tensor gate_up;    // [N, 2I]
  Tensor act;        // [N, I] silu(gate) * up
};

struct Qwen2Activations final : ForwardState {
  // fused: attention keeps no probabilities; the backward recomputes them.
  int64_t B = 0, T = 0;
  std::vector<Qwen2LayerActivations> layers;
  Tensor resid_out;   // [N, C] the last layer's output: the final norm's input
  Tensor pooled_in;   // [B, C] the last layer's output at each row's last real token
  Tensor final_rstd;  // [B]
  Tensor pooled;      // [B, C] the final norm of pooled_in (the norm is per row, so only these rows are normed)
  std::vector<int64_t> last;  // per row, that token's position
  ops::RopeTable rope;        // cos/sin of positions 0..T-1 for every row
  // Gradients, reused by the backward.
  Tensor d_resid, d_x, d_qkv, d_context, d_gate_up, d_act;  // [N, C] x2, [N, QKV], [N, HD], [N, 2I], [N, I]
  Tensor scratch;                                           // [N, C] a projection's output before its residual add
  Tensor d_pooled, d_pooled_in;                             // [B, C]
};

}  // namespace tach::train
