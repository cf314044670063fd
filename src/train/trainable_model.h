// What training needs from a model family: its parameter table, its head's labels, a forward
// that keeps what the backward needs, and the backward. BERT and DistilBERT (trainable_encoder)
// and every decoder family (trainable_decoder) implement it; the trainer, the evaluation, saving and tach
// profile --train see only this.
//
// Why hand-written backward passes rather than an autograd tape: each family is one fixed
// graph, so its backward is a page of op calls in reverse order, each op's backward sitting
// beside its forward in ops/. No tape means no per-op bookkeeping, no allocation per node, and
// activation memory planned up front and visible per category.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tach/model.h"
#include "tach/tensor.h"
#include "train/lora.h"
#include "train/parameters.h"

namespace tach::train {

// Dropout rates in effect for a step: the config's in training, zero with dropout off.
struct DropoutRates {
  float hidden = 0, attention = 0, classifier = 0;
  // A per-token head's dropout on the last hidden states: the token classifier's (classifier
  // dropout, DistilBERT's `dropout`), DistilBERT's qa_dropout; none before qa_outputs elsewhere.
  float head = 0;
  float lora = 0;  // on the LoRA adapters' inputs (lora_dropout), when the model has adapters
  uint64_t seed = 0;
  int64_t micro_batch = 0;  // with seed, names every mask of this forward
};

// What one forward keeps for its backward (a family's own layout, sized on first use for a
// [B, T] batch and reused while the shape holds), and the logits it produced.
// Pruning by importance (prune/importance.h): the backward hands each layer's unit activations
// over beside their gradients, before it reuses their buffers. Rows are every token (b * T + t)
// or, in an encoder sequence classifier's last layer, the first token of each sequence (b);
// other rows have no gradient there. Unset: nothing is called.
struct UnitGradientHooks {
  // context, d_context [rows, H D] (encoders: H D = C): the attention output projection's input
  // (the heads' contexts side by side, head_dim columns each) and its gradient.
  std::function<void(int layer, const Tensor& context, const Tensor& d_context)> attention;
  // act, d_act [rows, I]: the FFN activation's output (the second linear's input) and its gradient.
  std::function<void(int layer, const Tensor& act, const Tensor& d_act)> ffn;
  // in, out, d_out [rows, C]: the layer's input, its output and the gradient of the output.
  std::function<void(int layer, const Tensor& in, const Tensor& out, const Tensor& d_out)> layer;
};

struct ForwardState {
  virtual ~ForwardState() = default;
  // --exec fused: fused kernels where they pay (the family says which); same numbers up to rounding.
  bool fused = false;
  // --gradient-checkpointing: the forward keeps each layer's input only (one set of the layer's
  // intermediates is shared by all layers), and the backward recomputes a layer's forward, with
  // the same dropout masks, just before its backward. Same numbers; less memory, more time.
  bool checkpoint = false;
  // Data-parallel: called by the backward as each layer's gradients become final (the last
  // layer first), so their all-reduce can start while the layers below are computed.
  std::function<void(int layer)> layer_grads_ready;
  UnitGradientHooks unit_gradients;
  // The masked LM: the tokens (b * T + t) whose logits the loss reads, the chosen ones; the head
  // runs on those alone (logits [rows, V]), as only they reach the loss. Empty: every token.
  std::vector<int32_t> predicted_rows;
  // Set by the data phase (TrainableModel::prepare_batch) for the next forward: the batch was
  // checked on the host, where the collator made it, and these position ids [B, T] i32 made there
  // and uploaded with it. The forward takes them (leaving this undefined) and reads no batch back
  // from the device; undefined: the forward checks the batch and makes the positions itself.
  Tensor prepared_position_ids;
  Tensor logits;  // [B, L]; per-token heads [B * T, L] (question answering L = 2: start, end; masked LM: V)
  // Which kernels the attention runs, in words (ops/train_attention_kernel.h): set with the
  // buffers for a [B, T] batch, e.g. "cudnn fused attention, bf16" or "tach kernels, f32 (why)".
  std::string attention_kernels;
  LoraActivations lora;  // what the adapters save, when the model has them
};

// A family's activations started afresh for a new [B, T] (the buffers are sized for the old
// one), keeping what the caller set before the forward: the exec mode, the masked LM's predicted
// rows, the data phase's positions and the data-parallel and importance hooks. Without them the head would run on every token and the
// all-reduce would wait for the whole backward whenever a batch's length changes.
template <class Activations>
void restart_activations(Activations& a) {
  Activations fresh;
  fresh.fused = a.fused;
  fresh.checkpoint = a.checkpoint;
  fresh.predicted_rows = std::move(a.predicted_rows);
  fresh.prepared_position_ids = std::move(a.prepared_position_ids);
  fresh.layer_grads_ready = std::move(a.layer_grads_ready);
  fresh.unit_gradients = std::move(a.unit_gradients);
  a = std::move(fresh);
}

class TrainableModel {
 public:
  TrainableModel() = default;
  // Moves keep every Parameter where it is (the table is a deque), so the families' Parameter*
  // stay valid; a copy would leave them pointing into the original.
  TrainableModel(TrainableModel&&) = default;
  TrainableModel& operator=(TrainableModel&&) = default;
  TrainableModel(const TrainableModel&) = delete;
  TrainableModel& operator=(const TrainableModel&) = delete;
  virtual ~TrainableModel() = default;

  // Where everything a step owns lives: parameters, master weights, gradients, AdamW moments,
  // saved activations, LoRA A/B and NF4 codes. Every op of the step dispatches on it.
  Device device;
  ParameterTable params;
  std::unique_ptr<LoraSet> lora;  // null: full fine-tuning (attach_lora sets it)

  virtual const std::vector<std::string>& labels() const = 0;  // the head's id2label
  // The head that trains: a sequence classifier, or (encoders) a per-token head.
  virtual Head head() const { return Head::sequence_classification; }
  int64_t num_labels() const { return int64_t(labels().size()); }
  virtual std::string architecture() const = 0;  // as transformers names it, e.g. "BertForSequenceClassification"
  virtual bool uses_token_types() const = 0;
  // The longest row the positions allow (RoBERTa's start after padding_idx counted).
  virtual int64_t max_tokens() const = 0;

  // Every linear the step runs, for LoRA to attach to (train/lora.h).
  virtual std::vector<LinearSite> linear_sites() = 0;
  // After freezing: drops the gradients of fused tensors whose every part is frozen.
  virtual void release_frozen_grads() = 0;
  // QLoRA: every frozen nn.Linear weight (the layers', and BERT's pooler) to NF4 (train/parameters.h),
  // as bitsandbytes quantizes every nn.Linear but the output head; embeddings, norms, biases and
  // the trained head stay f32. Returns how many weight matrices were quantized.
  virtual int64_t quantize_base_nf4() = 0;

  virtual std::unique_ptr<ForwardState> new_state(bool fused) const = 0;
  // The data phase's part of the next forward, on the batch in host memory before it moves to the
  // model's device: checks it (an error naming the row and position of a bad id) and leaves in
  // `state` what the forward would otherwise read back from the device (the encoders' position
  // ids, ForwardState::prepared_position_ids; the decoders' head rows). By default nothing: the
  // forward checks for itself.
  virtual void prepare_batch(ForwardState& state, const TokenBatch& host_batch) const { (void)state, (void)host_batch; }
  // state.logits: [B, L] ([B * T, L] for a per-token head). batch: input_ids, attention_mask (and token_type_ids where used).
  virtual void forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dropout) const = 0;
  // From d_logits (the logits' shape): every trainable parameter's gradient accumulates (+=).
  virtual void backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                        const DropoutRates& dropout) = 0;
};

}  // namespace tach::train
