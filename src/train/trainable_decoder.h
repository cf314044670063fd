// Any decoder family's sequence classifier set up for training (…ForSequenceClassification),
// and ModernBERT's with every head it has: its parameters under their Hugging Face names (from the
// family row), a forward that keeps each layer's activations, and the backward
// (trainable_decoder_step.cc). The switches are DecoderConfig's, the same the inference forward
// (model/decoder.cc) reads. The sequence classifier reads the last non-pad token of each row, as
// transformers' does; ModernBERT's pools the first token or the mean, then head.dense, GELU and
// head.norm before the classifier. A per-token head (ModernBertForTokenClassification,
// …ForQuestionAnswering, …ForMaskedLM) runs the same head on every token (the masked LM on the
// chosen ones), then its classifier, or the decoder tied to the embeddings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/decoder.h"
#include "model/decoder_config.h"
#include "model/decoder_layer.h"
#include "model/family.h"
#include "model/weight_binder.h"
#include "train/trainable_model.h"

namespace tach::train {

struct TrainableDecoderLayer {
  Parameter* attn_norm = nullptr;      // [C]; none in ModernBERT's layer 0 (the identity)
  Parameter* q_norm = nullptr;         // [D] qk_norm only
  Parameter* k_norm = nullptr;         // [D]
  FusedTensor qkv_weight, qkv_bias;    // [(H + 2 KVH) D, C], [(H + 2 KVH) D] (bias: qkv_bias only)
  Parameter* o_proj;                   // [C, H D]
  Parameter* o_bias = nullptr;         // [C] o_bias only
  Parameter* attn_out_norm = nullptr;  // [C] sandwich norms only
  Parameter* mlp_norm;                 // [C]
  FusedTensor gate_up, gate_up_bias;   // [2I, C], [2I] (bias: mlp_bias only)
  Parameter* down;                     // [C, I]
  Parameter* down_bias = nullptr;      // [C] mlp_bias only
  Parameter* mlp_out_norm = nullptr;   // [C] sandwich norms only
  std::vector<int64_t> qkv_lora, o_lora, gate_up_lora, down_lora;  // LoRA adapters (train/lora.h)
};

struct DecoderActivations;

struct TrainableDecoder final : TrainableModel {
  model::DecoderConfig config;
  std::string body_prefix;              // "model."
  model::DecoderTensorNames names;      // the family's
  std::string classifier_architecture;  // the row's for the task: "ModernBertForTokenClassification"
  // The head that trains: a sequence classifier, or (families with one) a per-token head.
  Head task = Head::sequence_classification;
  bool per_token() const { return task != Head::sequence_classification; }
  std::string output_module;        // the output linear's module: score, classifier, qa_outputs, decoder
  float embed_scale = 0;            // Gemma: sqrt(C) (f32 master weights); 0 = none
  Parameter* embed = nullptr;       // [V, C]
  Parameter* embed_norm = nullptr;  // [C] ModernBERT's embeddings.norm
  std::vector<TrainableDecoderLayer> layers;
  Parameter* final_norm = nullptr;       // [C]
  Parameter* head_dense = nullptr;       // [C, C] ModernBERT's head.dense
  Parameter* head_dense_bias = nullptr;  // [C] when classifier_bias
  Parameter* head_norm = nullptr;        // [C] ModernBERT's head.norm
  // The output linear: [L, C] score, or ModernBERT's classifier (question answering L = 2: start,
  // end); the masked LM's decoder [V, C], which is `embed` where tied (both uses add to its gradient).
  Parameter* score = nullptr;
  Parameter* score_bias = nullptr;  // [L] or [V]: ModernBERT's classifier.bias, decoder.bias
  std::vector<int64_t> head_dense_lora;

  const std::vector<std::string>& labels() const override { return config.id2label; }
  Head head() const override { return task; }
  std::string architecture() const override { return classifier_architecture; }
  bool uses_token_types() const override { return false; }
  int64_t max_tokens() const override {
    return config.max_position_embeddings > 0 ? config.max_position_embeddings : INT64_MAX;  // RoPE has no table
  }
  std::vector<LinearSite> linear_sites() override;
  void release_frozen_grads() override;
  int64_t quantize_base_nf4() override;
  // mask: the batch's attention_mask [B, T] i32.
  void layer_forward(DecoderActivations& a, size_t li, const Tensor& mask, const DropoutRates& dr) const;
  std::unique_ptr<ForwardState> new_state(bool fused) const override;
  // Checks the host batch's ids against the vocabulary and finds the rows the head reads there
  // (a sequence classifier's pooled tokens, the masked LM's chosen ones), uploaded to the model's
  // device for the next forward (DecoderActivations::prepared_head_rows).
  void prepare_batch(ForwardState& state, const TokenBatch& host_batch) const override;
  void forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dropout) const override;
  void backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                const DropoutRates& dropout) override;

  // A norm's weight as applied: the parameter itself, or Gemma's 1 + w (refreshed by each forward).
  const Tensor& norm_weight(const Parameter* p) const;

 private:
  void refresh_applied_norms() const;
  mutable std::map<const Parameter*, Tensor> applied_norms_;  // Gemma only
  mutable std::map<int64_t, Tensor> ones_;                    // [n] ones on the device, per norm size
};

// With the head `task` (the family's row must have it; a per-token head's `config.id2label` says
// a token classifier's size, question answering's is start and end, the masked LM's none). A head
// tensor the checkpoint lacks (a bare or causal-LM model, a head of another size) is initialised
// as transformers does: N(0, initializer_range) from init_seed; notes says so. A checkpoint with
// another task's head lends the tensors of this one's it holds at their shapes, as
// from_pretrained does (a masked LM's head.dense and head.norm to a token classifier). The
// parameters are read and initialised in host memory and land on `device` (the model's).
TrainableDecoder build_trainable_decoder(const model::DecoderConfig& config, const model::ModelFamily& family,
                                         model::WeightBinder& binder, uint64_t init_seed,
                                         std::vector<std::string>* notes, Device device = Device::cpu(),
                                         Head task = Head::sequence_classification);

struct DecoderActivations final : ForwardState {
  // fused: attention keeps no probabilities; the backward recomputes them.
  int64_t B = 0, T = 0;
  // Per layer, what its forward wrote and its backward reads (model/decoder_layer.h); under
  // gradient checkpointing every layer but its resid shares the first layer's buffers.
  std::vector<model::DecoderLayerTensors> layers;
  // Per layer, q, k and v as views of its fused q|k|v [N, (H + 2 KVH) D] (rows strided by the
  // whole width), made once per shape so that the step makes none.
  struct QkvViews {
    Tensor q, k, v;  // [N, H D], [N, KVH D], [N, KVH D]
  };
  std::vector<QkvViews> qkv_views;
  Tensor embedded, embed_mean, embed_rstd;  // ModernBERT: [N, C] the embeddings before their norm, its [N] stats
  Tensor resid_out;                         // [N, C] the last layer's output: the final norm's input
  // The head reads R rows: a sequence classifier's pooled token per row (R = B), a per-token head's
  // every token (R = N), the masked LM's chosen ones (R = M). Below, [R, ...] are views of the first
  // R rows of buffers sized for the most (head_row_buffers).
  Tensor pooled_in;               // [R, C] the last layer's output at the rows the head reads
  Tensor final_mean, final_rstd;  // [R] (mean pooling: [N]; mean for LayerNorms only)
  Tensor final_normed;            // [N, C] mean pooling: every row's final norm, masked_mean into pooled
  Tensor pooled;          // [R, C] the final norm of pooled_in (the norm is per row, so only these rows are normed)
  Tensor pooled_dropped;  // [R, C] a causal token classifier's dropout of pooled, when its rate is not 0
  Tensor head_pre, head_act, head_mean, head_rstd, head_out;  // ModernBERT's head: [R, C] x3, [R] x2
  std::vector<int32_t> head_rows;                             // the R rows (b * T + t) the head reads, in host memory
  Tensor pooled_rows;  // [R] i32 head_rows on the model's device; undefined when R = 0
  // Each [R, ...] field above and below with its full-size buffer.
  std::vector<std::pair<Tensor DecoderActivations::*, Tensor>> head_row_buffers;
  // The head's rows of a [B, T] batch, found in its ids in host memory.
  struct HeadRows {
    bool ready = false;
    int64_t B = 0, T = 0;
    std::vector<int32_t> rows;  // [R] b * T + t
    Tensor on_device;           // [R] i32 rows on the model's device; undefined when R = 0
  };
  // Set by the data phase (prepare_batch) for the next forward, which takes it (leaving it not
  // ready) and reads no batch back from the device; not ready: the forward finds the rows itself.
  HeadRows prepared_head_rows;
  model::DecoderRope rope;  // cos/sin of positions 0..T-1 for every row
  // Gradients, reused by the backward.
  Tensor d_resid, d_x, d_qkv, d_context, d_gate_up, d_act;  // [N, C] x2, [N, QKV], [N, HD], [N, 2I], [N, I]
  Tensor d_q, d_k, d_v;                                     // views of d_qkv, as qkv_views
  Tensor d_branch;                                          // [N, C] sandwich norms: d(branch before its norm)
  Tensor d_pooled, d_pooled_in;                             // [R, C]
  Tensor d_head;                                            // [R, C] ModernBERT's head
};

}  // namespace tach::train
