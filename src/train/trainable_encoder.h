// A post-LN encoder (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, MPNet) with the head it trains (a
// sequence classifier, a token classifier, question answering's start/end outputs, or the
// masked-LM head) set up for training: its parameters in a table under their Hugging Face names
// (the row's …ForSequenceClassification, …ForTokenClassification, …ForQuestionAnswering, …ForMaskedLM),
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

// A = heads x head_dim, the layer's attention width: C, or less where heads were pruned
// (config.json's pruned_heads; each layer keeps its own heads, as transformers 4's prune_heads left them).
struct TrainableLayer {
  int64_t heads = 0;                         // the heads the layer keeps
  FusedTensor qkv_weight, qkv_bias;          // [3A, C], [3A]: query, key, value stacked
  Parameter *out_weight, *out_bias;          // [C, A], [C]
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
  // The head that trains: a sequence classifier (on the first token), or a per-token head.
  Head task = Head::sequence_classification;
  bool per_token() const { return task != Head::sequence_classification; }
  // Sequence classifier: BERT's pooler, DistilBERT's pre_classifier, RoBERTa's classifier.dense.
  Parameter *head_dense_weight = nullptr, *head_dense_bias = nullptr;
  // The output layer: the sequence or token classifier [L, C], [L]; question answering's
  // qa_outputs [2, C], [2] (start, end).
  Parameter *classifier_weight = nullptr, *classifier_bias = nullptr;
  // The masked-LM head: LayerNorm(act(dense(h))) then the decoder [V, C] (the word embeddings
  // where tied: then mlm_decoder == word, and both uses add to its gradient) + mlm_bias [V].
  Parameter *mlm_dense_weight = nullptr, *mlm_dense_bias = nullptr;
  Parameter *mlm_norm_gamma = nullptr, *mlm_norm_beta = nullptr;
  Parameter *mlm_decoder = nullptr, *mlm_bias = nullptr;
  std::vector<int64_t> mlm_dense_lora;      // the masked-LM dense is a "dense" PEFT's default targets may match
  bool mlm_gelu = true;                     // the masked-LM dense's activation: GELU, or ReLU (a config's hidden_act)
  std::vector<int64_t> head_dense_lora;     // BERT's pooler.dense is a "dense" that PEFT may target
  const model::ModelFamily* row = nullptr;  // the family's row: the heads' tensor names
  const model::HeadTensorNames& head_names() const { return row->head_names; }
  const model::EncoderFamily& family() const { return *config.family; }
  std::string prefix() const { return std::string(family().module) + "."; }  // "bert.": the body's saved names

  const std::vector<std::string>& labels() const override { return config.id2label; }
  Head head() const override { return task; }
  std::string architecture() const override { return head_architecture; }
  std::string head_architecture;  // the row's for the task: "XLMRobertaForSequenceClassification"
  bool uses_token_types() const override { return family().token_types; }
  int64_t max_tokens() const override { return shape.max_positions - shape.positions_needed(0); }
  std::vector<LinearSite> linear_sites() override;
  void release_frozen_grads() override;
  int64_t quantize_base_nf4() override;
  std::unique_ptr<ForwardState> new_state(bool fused) const override;
  // Checks the host batch against the model and makes its position ids there (RoBERTa's count the
  // tokens that are not padding), uploaded to the model's device (trainable_encoder_step.cc).
  void prepare_batch(ForwardState& state, const TokenBatch& host_batch) const override;
  void forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dropout) const override;
  void backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                const DropoutRates& dropout) override;
};

// Builds from a checkpoint (or a preset's synthetic binder) with the head `task`.
// `config.id2label` says a classifier's size (question answering: 2, the masked LM: none). A
// head the checkpoint does not hold (a bare BertModel, a head of another size or task) is
// initialised as transformers does: weights N(0, initializer_range), biases 0, drawn from
// `init_seed`; `notes` says which, and which of the checkpoint's tensors were not used, in
// transformers' words naming `checkpoint` (its directory; empty: a plain list). The parameters
// are read and initialised in host memory and land on `device` (the model's).
TrainableEncoder build_trainable_encoder(const model::EncoderConfig& config, const model::ModelFamily& family,
                                         model::WeightBinder& binder, uint64_t init_seed,
                                         std::vector<std::string>* notes, Head task = Head::sequence_classification,
                                         const std::string& checkpoint = "", Device device = Device::cpu());

// What one forward keeps for the backward, per layer, sized for [B, T]; A is the layer's attention
// width (TrainableLayer), H its heads. Allocated once for the largest batch and reused across steps
// (category activations). Under gradient checkpointing the layers' intermediates are views of one
// set of buffers, sized for the widest layer (a layer with pruned heads uses their leading elements).
struct LayerActivations {
  Tensor input;           // [N, C] the layer's input (the previous LayerNorm's output)
  Tensor qkv;             // [N, 3A]
  Tensor q, k, v;         // [B, T, A] views of qkv's column blocks (q [B, 1, A]: a classifier's last layer)
  Tensor probs;           // [B, H, T, T] softmax before dropout (eager only)
  Tensor context;         // [N, A]
  Tensor attention_out;   // [B, T, A] view of context (the first token's row [B, 1, A]: a classifier's last layer)
  Tensor residual1;       // [N, C] input + dropout(attention output), LayerNorm 1's input
  Tensor d_context_rows;  // [N, A] view of residual1's leading elements: the backward's d(context) ([B, A]:
                          // the first tokens', a classifier's last layer)
  Tensor d_context;       // [B, T, A] the same rows (full layers only)
  Tensor mean1, rstd1;    // [N]
  Tensor hidden1;         // [N, C] LayerNorm 1's output
  Tensor ffn_pre;         // [N, I] before the activation
  Tensor ffn_act;         // [N, I] after it
  Tensor residual2;       // [N, C]
  Tensor mean2, rstd2;    // [N]
  // A sequence classifier's last layer runs everything after attention for the first token of each row only: its
  // residual1, hidden1, residual2 are [B, C], ffn_pre and ffn_act [B, I], the statistics [B], and
  // context_cls [B, A] holds the first tokens' context (context stays [N, A]).
  Tensor context_cls;
  // The backward's d(q|k|v) [N, 3A] and its column blocks [B, T, A]: views of EncoderActivations::d_qkv.
  Tensor d_qkv, d_q, d_k, d_v;
};

// A sequence classifier's last layer reads each sequence's first token only: views of every
// T-th row (row stride T·C or T·A) of the [N, C] and [N, A] buffers it touches, made once with
// the buffers; A is the last layer's attention width.
struct FirstTokenViews {
  Tensor context;         // [B, A] of the last layer's context
  Tensor input;           // [B, C] of its input (the residual)
  Tensor d_hidden;        // [B, C] of d_hidden: d(layer input) at the first tokens
  Tensor d_context;       // [B, 1, A] of d_scratch's leading [N, A]: attention's dout
  Tensor d_context_rows;  // [B, A] of the same rows
  Tensor d_q;             // [B, 1, A] of the last layer's d_q
};

struct EncoderActivations final : ForwardState {
  // fused: attention keeps no probabilities (the backward recomputes them), the bias and GELU
  // share one pass, dropout + residual + LayerNorm share one pass, and the backward fuses GELU's
  // derivative with the bias gradient. Same arithmetic up to rounding.
  int64_t B = 0, T = 0;
  Tensor emb_sum;             // [N, C] word + position (+ type), the embedding LayerNorm's input
  Tensor emb_mean, emb_rstd;  // [N]
  std::vector<LayerActivations> layers;
  Tensor position_ids;          // [B, T] i32: the forward's, read again by the backward
  Tensor zero_types;            // [N] i32 zeros: the token types of a batch that names none
  Tensor buckets;               // MPNet: the relative position buckets [T, T] i32
  Tensor d_bias_parts;          // MPNet: [B, H, buckets] a layer's bias gradient per sequence and head
  FirstTokenViews first_token;  // a sequence classifier's last layer
  Tensor first;                 // [B, C] the last layer's output at the first token of each row
  Tensor first_dropped;         // [B, C] first after dropout (RoBERTa's head), else undefined
  Tensor head_hidden;           // [B, C] act(dense(first)), before dropout
  Tensor head_dropped;          // [B, C] after dropout (logits [B, L]: ForwardState's)
  // Per-token heads (logits [N, L], [N, 2] or [N, V]).
  Tensor sequence_output;               // [N, C] the last layer's output
  Tensor token_dropped;                 // [N, C] after the dropout before the classifier or qa_outputs
  Tensor mlm_input;                     // [N, C] the predicted rows of sequence_output (first M rows)
  Tensor mlm_pre, mlm_act, mlm_hidden;  // [N, C] the masked-LM dense's output, its activation, the LayerNorm's
  Tensor mlm_mean, mlm_rstd;            // [N]
  // Gradient buffers reused by the backward; d_qkv [N, 3A] for the widest layer, which each
  // layer views (LayerActivations::d_qkv).
  Tensor d_hidden, d_scratch, d_qkv, d_ffn;  // [N, C], [N, C], [N, 3A], [N, I]
  Tensor d_head, d_first;                    // [B, C], [B, C]
  Tensor d_cls1, d_cls2, d_cls_ffn;          // the last layer's: [B, C], [B, C], [B, I]
};

// Sizes (or re-sizes) the activations for a [B, T] batch.
void prepare_activations(EncoderActivations& a, const TrainableEncoder& m, int64_t B, int64_t T);

// The forward of the classifier: logits [B, L] in a.logits. batch: input_ids, attention_mask,
// token_type_ids (optional) as in TokenBatch.
void trainable_forward(const TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch,
                       const DropoutRates& dropout);
// The per-token heads (trainable_encoder_heads.cc): from a.sequence_output [N, C] to a.logits;
// the backward from d_logits to d(sequence output) in a.d_hidden. key: the head's dropout masks.
void token_head_forward(const TrainableEncoder& m, EncoderActivations& a, const DropoutRates& dropout, uint64_t key);
void token_head_backward(TrainableEncoder& m, EncoderActivations& a, const Tensor& d_logits,
                         const DropoutRates& dropout, uint64_t key);
// The backward from d_logits (a.logits' shape): every parameter's gradient accumulates (+=).
void trainable_backward(TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch, const Tensor& d_logits,
                        const DropoutRates& dropout);

}  // namespace tach::train
