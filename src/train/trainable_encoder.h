// A post-LN encoder sequence classifier (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, MPNet) set up
// for training: its parameters in a table under their Hugging Face names (the row's
// …ForSequenceClassification),
// with a hand-written forward that keeps what the backward needs, layer by layer, and the
// backward itself (trainable_encoder_step.cc).
// (Why hand-written rather than a tape: trainable_model.h.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/family.h"
#include "model/encoder.h"
#include "model/weight_binder.h"
#include "tach/model.h"
#include "tach/tensor.h"
#include "train/parameters.h"
#include "train/trainable_model.h"

namespace tach::train {

struct TrainableLayer {
  FusedTensor qkv_weight, qkv_bias;          // [3C, C], [3C]: query, key, value stacked
  Parameter *out_weight, *out_bias;          // [C, C], [C]
  Parameter *ln1_gamma, *ln1_beta;           // [C]
  Parameter *ffn_in_weight, *ffn_in_bias;    // [I, C], [I]
  Parameter *ffn_out_weight, *ffn_out_bias;  // [C, I], [C]
  Parameter *ln2_gamma, *ln2_beta;           // [C]
  // LoRA adapters (indices into TrainableModel::lora) on q|k|v, the output projection and the FFN.
  std::vector<int64_t> qkv_lora, out_lora, ffn_in_lora, ffn_out_lora;
};

struct TrainableEncoder final : TrainableModel {
  model::EncoderConfig config;
  model::EncoderShape shape;
  Parameter *word = nullptr, *position = nullptr, *token_type = nullptr;  // token_type: not DistilBERT
  Parameter *emb_ln_gamma = nullptr, *emb_ln_beta = nullptr;
  Parameter* relative_bias = nullptr;  // MPNet's [buckets, H], shared by every layer
  std::vector<TrainableLayer> layers;
  // BERT's pooler, DistilBERT's pre_classifier, RoBERTa's classifier.dense; then the output layer.
  Parameter *head_dense_weight = nullptr, *head_dense_bias = nullptr;
  Parameter *classifier_weight = nullptr, *classifier_bias = nullptr;  // [L, C], [L]
  std::vector<int64_t> head_dense_lora;  // BERT's pooler.dense is a "dense" that PEFT may target
  const model::EncoderFamily& family() const { return *config.family; }
  std::string prefix() const { return std::string(family().module) + "."; }  // "bert.": the body's saved names

  const std::vector<std::string>& labels() const override { return config.id2label; }
  std::string architecture() const override { return classifier_architecture; }
  std::string classifier_architecture;  // the row's: "XLMRobertaForSequenceClassification"
  bool uses_token_types() const override { return family().token_types; }
  int64_t max_tokens() const override { return shape.max_positions - shape.positions_needed(0); }
  std::vector<LinearSite> linear_sites() override;
  void release_frozen_grads() override;
  int64_t quantize_base_nf4() override;
  std::unique_ptr<ForwardState> new_state(bool fused) const override;
  void forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dropout) const override;
  void backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                const DropoutRates& dropout) override;
};

// Builds from a checkpoint (or a preset's synthetic binder). `config.id2label` says the head's
// size. A head the checkpoint does not hold (a bare BertModel, or a head of another size) is
// initialised as transformers does: weights N(0, initializer_range), biases 0, drawn from
// `init_seed`; `notes` says which.
TrainableEncoder build_trainable_encoder(const model::EncoderConfig& config, const model::ModelFamily& family,
                                         model::WeightBinder& binder, uint64_t init_seed,
                                         std::vector<std::string>* notes);

// What one forward keeps for the backward, per layer, sized for [B, T]. Allocated once for the
// largest batch and reused across steps (category activations).
struct LayerActivations {
  Tensor input;         // [N, C] the layer's input (the previous LayerNorm's output)
  Tensor qkv;           // [N, 3C]
  Tensor probs;         // [B, H, T, T] softmax before dropout (eager only)
  Tensor context;       // [N, C]
  Tensor residual1;     // [N, C] input + dropout(attention output), LayerNorm 1's input
  Tensor mean1, rstd1;  // [N]
  Tensor hidden1;       // [N, C] LayerNorm 1's output
  Tensor ffn_pre;       // [N, I] before the activation
  Tensor ffn_act;       // [N, I] after it
  Tensor residual2;     // [N, C]
  Tensor mean2, rstd2;  // [N]
  // The last layer runs everything after attention for the first token of each row only: its
  // residual1, hidden1, residual2 are [B, C], ffn_pre and ffn_act [B, I], the statistics [B], and
  // context_cls [B, C] holds the first tokens' context (context stays [N, C]).
  Tensor context_cls;
};

struct EncoderActivations final : ForwardState {
  // fused: attention keeps no probabilities (the backward recomputes them), the bias and GELU
  // share one pass, dropout + residual + LayerNorm share one pass, and the backward fuses GELU's
  // derivative with the bias gradient. Same arithmetic up to rounding.
  int64_t B = 0, T = 0;
  Tensor emb_sum;             // [N, C] word + position (+ type), the embedding LayerNorm's input
  Tensor emb_mean, emb_rstd;  // [N]
  std::vector<LayerActivations> layers;
  std::vector<int32_t> buckets;  // MPNet: the relative position buckets [T, T]
  Tensor d_bias_parts;           // MPNet: [B, H, buckets] a layer's bias gradient per sequence and head
  Tensor first;                  // [B, C] the last layer's output at the first token of each row
  Tensor first_dropped;          // [B, C] first after dropout (RoBERTa's head), else undefined
  Tensor head_hidden;            // [B, C] act(dense(first)), before dropout
  Tensor head_dropped;           // [B, C] after dropout (logits [B, L]: ForwardState's)
  // Gradient buffers reused by the backward.
  Tensor d_hidden, d_scratch, d_qkv, d_ffn;  // [N, C], [N, C], [N, 3C], [N, I]
  Tensor d_head, d_first;                    // [B, C], [B, C]
  Tensor d_cls1, d_cls2, d_cls_ffn;          // the last layer's: [B, C], [B, C], [B, I]
};

// Sizes (or re-sizes) the activations for a [B, T] batch.
void prepare_activations(EncoderActivations& a, const TrainableEncoder& m, int64_t B, int64_t T);

// The forward of the classifier: logits [B, L] in a.logits. batch: input_ids, attention_mask,
// token_type_ids (optional) as in TokenBatch.
void trainable_forward(const TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch,
                       const DropoutRates& dropout);
// The backward from d_logits [B, L]: every parameter's gradient accumulates (+=).
void trainable_backward(TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch, const float* d_logits,
                        const DropoutRates& dropout);

}  // namespace tach::train
