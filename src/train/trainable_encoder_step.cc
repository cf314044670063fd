// The training forward and its backward, in reverse order of the same calls. Every op is an
// ops/ kernel; the spans name module paths as transformers does, under "backward." for the
// backward, so a trace and the op table say where time goes in both directions.
#include <cmath>
#include <optional>
#include <utility>

#include "core/trace.h"
#include "ops/activation.h"
#include "ops/add.h"
#include "ops/attention.h"
#include "ops/copy_rows.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/fill.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "tach/error.h"
#include "train/step_support.h"
#include "train/trainable_encoder.h"

namespace tach::train {

namespace {

using step::grad;
using step::weight;

const Tensor kNone;  // an operand left out: no bias, a frozen parameter's gradient

// Dropout sites, one key per site and micro-batch.
int64_t site_embeddings() { return 0; }
int64_t site_attention_probs(int64_t layer) { return 1 + 4 * layer; }
int64_t site_attention_output(int64_t layer) { return 2 + 4 * layer; }
int64_t site_ffn(int64_t layer) { return 3 + 4 * layer; }
int64_t site_head(int64_t layers) { return 1 + 4 * layers; }
int64_t site_head_input(int64_t layers) { return 2 + 4 * layers; }  // RoBERTa's dropout before classifier.dense

uint64_t key(const DropoutRates& d, int64_t site) { return ops::dropout_key(d.seed, d.micro_batch, site); }

std::string layer_module(const TrainableEncoder& m, size_t i) {
  return core::tracing() ? core::concat(m.family().names.layer, i) : std::string();
}

// The LoRA adapters of an engine linear (none in full fine-tuning): forward adds to its output y
// [M, out], backward adds to its input's gradient dx [M, in] (undefined: none wanted) and fills
// the adapters' own.
void lora_fwd(const TrainableEncoder& m, const std::vector<int64_t>& ids, const Tensor& y, const Tensor& x,
              EncoderActivations& a, const DropoutRates& dr) {
  if (m.lora) m.lora->forward(ids, y, x, a.lora, dr);
}

void lora_bwd(const TrainableEncoder& m, const std::vector<int64_t>& ids, const Tensor& dx, const Tensor& dy,
              const Tensor& x, EncoderActivations& a, const DropoutRates& dr) {
  if (m.lora) m.lora->backward(ids, dx, dy, x, a.lora, dr);
}

// MPNet's relative position bias table [buckets, H], or none.
const Tensor& bias_table(const TrainableEncoder& m) { return m.relative_bias ? m.relative_bias->value : kNone; }
// Its gradient, which every layer's attention backward adds to; none when absent or frozen.
const Tensor& bias_grad(const TrainableEncoder& m) { return m.relative_bias ? grad(m.relative_bias) : kNone; }

const Tensor& layer_norm_beta(const Parameter* p) { return p ? p->value : kNone; }

// 1/sqrt(head_dim): the head size stays hidden / num_heads where heads were pruned.
float attention_scale(const TrainableEncoder& m) { return 1.0f / std::sqrt(float(m.shape.head_dim())); }

// One layer's forward over every token: from a.layers[li].input to the next layer's input,
// keeping what its backward needs.
void full_layer_forward(const TrainableEncoder& m, EncoderActivations& a, size_t li, const Tensor& mask,
                        const DropoutRates& dr) {
  const float eps = m.shape.eps, scale = attention_scale(m);
  const TrainableLayer& w = m.layers[li];
  const int64_t H = w.heads;
  LayerActivations& s = a.layers[li];
  // The next layer's input; after the last layer (a per-token head's), the sequence output.
  const Tensor& out = li + 1 < a.layers.size() ? a.layers[li + 1].input : a.sequence_output;
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  {
    core::Span span(core::SpanKind::module, "attention");
    ops::linear_forward_train(s.qkv, s.input, weight(w.qkv_weight), w.qkv_bias.value);
    lora_fwd(m, w.qkv_lora, s.qkv, s.input, a, dr);
    ops::attention_forward_train(s.attention_out, s.probs, s.q, s.k, s.v, mask, int(H), scale, dr.attention,
                                 key(dr, site_attention_probs(int64_t(li))), bias_table(m), a.buckets);
    // BERT and RoBERTa drop out the attention output (BertSelfOutput); DistilBERT does not.
    const float out_p = m.family().attention_output_dropout ? dr.hidden : 0.f;
    const uint64_t out_key = key(dr, site_attention_output(int64_t(li)));
    if (a.fused) {
      // The projection goes to a scratch buffer (d_scratch is free in the forward), then one pass.
      ops::linear_forward_train(a.d_scratch, s.context, weight(w.out_weight), w.out_bias->value);
      lora_fwd(m, w.out_lora, a.d_scratch, s.context, a, dr);
      ops::dropout_add_layer_norm_forward(s.residual1, s.hidden1, a.d_scratch, s.input, w.ln1_gamma->value,
                                          w.ln1_beta->value, eps, out_p, out_key, s.mean1, s.rstd1);
    } else {
      ops::linear_forward_train(s.residual1, s.context, weight(w.out_weight), w.out_bias->value);
      lora_fwd(m, w.out_lora, s.residual1, s.context, a, dr);
      ops::dropout_forward(s.residual1, s.residual1, out_p, out_key);
      ops::add_inplace(s.residual1, s.input);
      ops::layer_norm_forward_train(s.hidden1, s.residual1, w.ln1_gamma->value, w.ln1_beta->value, eps, s.mean1,
                                    s.rstd1);
    }
  }
  core::Span span(core::SpanKind::module, "ffn");
  const bool gelu = m.config.hidden_act != "relu";
  if (a.fused && gelu) {
    ops::linear_forward_train(s.ffn_pre, s.hidden1, weight(w.ffn_in_weight), kNone);
    lora_fwd(m, w.ffn_in_lora, s.ffn_pre, s.hidden1, a, dr);
    ops::bias_gelu_forward(s.ffn_pre, s.ffn_act, w.ffn_in_bias->value);
  } else {
    ops::linear_forward_train(s.ffn_pre, s.hidden1, weight(w.ffn_in_weight), w.ffn_in_bias->value);
    lora_fwd(m, w.ffn_in_lora, s.ffn_pre, s.hidden1, a, dr);
    if (gelu) ops::gelu_forward(s.ffn_act, s.ffn_pre);
    else ops::relu_forward(s.ffn_act, s.ffn_pre);
  }
  if (a.fused) {
    ops::linear_forward_train(a.d_scratch, s.ffn_act, weight(w.ffn_out_weight), w.ffn_out_bias->value);
    lora_fwd(m, w.ffn_out_lora, a.d_scratch, s.ffn_act, a, dr);
    ops::dropout_add_layer_norm_forward(s.residual2, out, a.d_scratch, s.hidden1, w.ln2_gamma->value, w.ln2_beta->value,
                                        eps, dr.hidden, key(dr, site_ffn(int64_t(li))), s.mean2, s.rstd2);
    return;
  }
  ops::linear_forward_train(s.residual2, s.ffn_act, weight(w.ffn_out_weight), w.ffn_out_bias->value);
  lora_fwd(m, w.ffn_out_lora, s.residual2, s.ffn_act, a, dr);
  ops::dropout_forward(s.residual2, s.residual2, dr.hidden, key(dr, site_ffn(int64_t(li))));
  ops::add_inplace(s.residual2, s.hidden1);
  ops::layer_norm_forward_train(out, s.residual2, w.ln2_gamma->value, w.ln2_beta->value, eps, s.mean2, s.rstd2);
}

// The last layer, for the first token of each row only: the classifier reads nothing else, so
// keys and values are computed for every token and everything after attention (the output
// projection, both LayerNorms, the FFN) for B rows instead of B·T. transformers computes the
// other rows and discards them; the loss and every gradient are the same. Writes a.first [B, C].
void last_layer_forward(const TrainableEncoder& m, EncoderActivations& a, size_t li, const Tensor& mask,
                        const DropoutRates& dr) {
  const float eps = m.shape.eps, scale = attention_scale(m);
  const TrainableLayer& w = m.layers[li];
  const int64_t H = w.heads;
  LayerActivations& s = a.layers[li];
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  {
    core::Span span(core::SpanKind::module, "attention");
    ops::linear_forward_train(s.qkv, s.input, weight(w.qkv_weight), w.qkv_bias.value);
    lora_fwd(m, w.qkv_lora, s.qkv, s.input, a, dr);
    // s.q and s.attention_out: the first token's row of each sequence [B, 1, C].
    ops::attention_forward_train(s.attention_out, s.probs, s.q, s.k, s.v, mask, int(H), scale, dr.attention,
                                 key(dr, site_attention_probs(int64_t(li))), bias_table(m), a.buckets);
    ops::copy_rows(s.context_cls, a.first_token.context);  // context_cls [B, C]: the first tokens' context
    ops::linear_forward_train(s.residual1, s.context_cls, weight(w.out_weight), w.out_bias->value);
    lora_fwd(m, w.out_lora, s.residual1, s.context_cls, a, dr);
    ops::dropout_forward(s.residual1, s.residual1, m.family().attention_output_dropout ? dr.hidden : 0.f,
                         key(dr, site_attention_output(int64_t(li))));
    ops::add_inplace(s.residual1, a.first_token.input);
    ops::layer_norm_forward_train(s.hidden1, s.residual1, w.ln1_gamma->value, w.ln1_beta->value, eps, s.mean1, s.rstd1);
  }
  core::Span span(core::SpanKind::module, "ffn");
  ops::linear_forward_train(s.ffn_pre, s.hidden1, weight(w.ffn_in_weight), w.ffn_in_bias->value);
  lora_fwd(m, w.ffn_in_lora, s.ffn_pre, s.hidden1, a, dr);
  if (m.config.hidden_act != "relu") ops::gelu_forward(s.ffn_act, s.ffn_pre);
  else ops::relu_forward(s.ffn_act, s.ffn_pre);
  ops::linear_forward_train(s.residual2, s.ffn_act, weight(w.ffn_out_weight), w.ffn_out_bias->value);
  lora_fwd(m, w.ffn_out_lora, s.residual2, s.ffn_act, a, dr);
  ops::dropout_forward(s.residual2, s.residual2, dr.hidden, key(dr, site_ffn(int64_t(li))));
  ops::add_inplace(s.residual2, s.hidden1);
  ops::layer_norm_forward_train(a.first, s.residual2, w.ln2_gamma->value, w.ln2_beta->value, eps, s.mean2, s.rstd2);
}

// Its backward, from d_out = d(a.first) [B, C]; leaves d(layer input) [N, C] in a.d_hidden.
void last_layer_backward(TrainableEncoder& m, EncoderActivations& a, size_t li, const Tensor& mask,
                         const DropoutRates& dr, const Tensor& d_out) {
  const float scale = attention_scale(m);
  TrainableLayer& w = m.layers[li];
  const int64_t H = w.heads;
  LayerActivations& s = a.layers[li];
  const Tensor& d1 = a.d_cls1;  // [B, C]
  const Tensor& d2 = a.d_cls2;  // [B, C]
  if (a.unit_gradients.layer) a.unit_gradients.layer(int(li), a.first_token.input, a.first, d_out);
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  {
    core::Span span(core::SpanKind::module, "ffn");
    ops::fill_zero(d1);
    ops::layer_norm_backward(d1, grad(w.ln2_gamma), grad(w.ln2_beta), d_out, s.residual2, w.ln2_gamma->value, s.mean2,
                             s.rstd2);
    // The residual carries d(residual2) to hidden1; the FFN branch gets it through dropout.
    ops::copy_rows(d2, d1);
    ops::dropout_backward(d1, d1, dr.hidden, key(dr, site_ffn(int64_t(li))));
    ops::fill_zero(a.d_cls_ffn);
    ops::linear_backward(a.d_cls_ffn, grad(w.ffn_out_weight), grad(w.ffn_out_bias), d1, s.ffn_act,
                         weight(w.ffn_out_weight));
    lora_bwd(m, w.ffn_out_lora, a.d_cls_ffn, d1, s.ffn_act, a, dr);
    if (a.unit_gradients.ffn) a.unit_gradients.ffn(int(li), s.ffn_act, a.d_cls_ffn);
    // d(pre-activation) goes into ffn_act's buffer, which the backward no longer needs.
    ops::fill_zero(s.ffn_act);
    if (m.config.hidden_act == "relu") ops::relu_backward(s.ffn_act, s.ffn_pre, a.d_cls_ffn);
    else ops::gelu_backward(s.ffn_act, s.ffn_pre, a.d_cls_ffn);
    ops::linear_backward(d2, grad(w.ffn_in_weight), grad(w.ffn_in_bias), s.ffn_act, s.hidden1, weight(w.ffn_in_weight));
    lora_bwd(m, w.ffn_in_lora, d2, s.ffn_act, s.hidden1, a, dr);
  }
  core::Span span(core::SpanKind::module, "attention");
  ops::fill_zero(d1);
  ops::layer_norm_backward(d1, grad(w.ln1_gamma), grad(w.ln1_beta), d2, s.residual1, w.ln1_gamma->value, s.mean1,
                           s.rstd1);
  ops::copy_rows(d2, d1);  // the residual: d(input) at the first tokens
  if (m.family().attention_output_dropout)
    ops::dropout_backward(d1, d1, dr.hidden, key(dr, site_attention_output(int64_t(li))));
  // d(context_cls) into residual1's buffer, no longer needed; then into the first tokens' rows of
  // d_scratch, the only rows of d(context) the attention backward reads.
  ops::fill_zero(s.d_context_rows);
  ops::linear_backward(s.d_context_rows, grad(w.out_weight), grad(w.out_bias), d1, s.context_cls, weight(w.out_weight));
  lora_bwd(m, w.out_lora, s.d_context_rows, d1, s.context_cls, a, dr);
  if (a.unit_gradients.attention) a.unit_gradients.attention(int(li), s.context_cls, s.d_context_rows);
  ops::copy_rows(a.first_token.d_context_rows, s.d_context_rows);
  ops::fill_zero(s.d_qkv);  // the rows of dq after the first token stay zero
  ops::attention_backward(a.first_token.d_q, s.d_k, s.d_v, bias_grad(m), a.d_bias_parts, a.first_token.d_context,
                          s.probs, s.q, s.k, s.v, mask, int(H), scale, dr.attention,
                          key(dr, site_attention_probs(int64_t(li))), bias_table(m), a.buckets);
  ops::fill_zero(a.d_hidden);
  ops::linear_backward(a.d_hidden, grad(w.qkv_weight), grad(w.qkv_bias), s.d_qkv, s.input, weight(w.qkv_weight));
  lora_bwd(m, w.qkv_lora, a.d_hidden, s.d_qkv, s.input, a, dr);
  ops::add_inplace(a.first_token.d_hidden, d2);
}

// Layer li's forward; a sequence classifier's last layer runs for the first tokens only.
void layer_forward(const TrainableEncoder& m, EncoderActivations& a, size_t li, const Tensor& mask,
                   const DropoutRates& dr) {
  if (li + 1 == m.layers.size() && !m.per_token()) last_layer_forward(m, a, li, mask, dr);
  else full_layer_forward(m, a, li, mask, dr);
}

// A full layer's backward (every token): a.d_hidden holds d(layer output) on entry and
// d(layer input) on exit (none for the first layer when the embeddings are frozen).
void full_layer_backward(TrainableEncoder& m, EncoderActivations& a, size_t li, const Tensor& mask,
                         const DropoutRates& dr, bool embeddings_frozen) {
  const float scale = attention_scale(m);
  TrainableLayer& w = m.layers[li];
  const int64_t H = w.heads;
  LayerActivations& s = a.layers[li];
  if (a.unit_gradients.layer)
    a.unit_gradients.layer(int(li), s.input, li + 1 < a.layers.size() ? a.layers[li + 1].input : a.sequence_output,
                           a.d_hidden);
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  {
    core::Span span(core::SpanKind::module, "ffn");
    ops::fill_zero(a.d_scratch);
    ops::layer_norm_backward(a.d_scratch, grad(w.ln2_gamma), grad(w.ln2_beta), a.d_hidden, s.residual2,
                             w.ln2_gamma->value, s.mean2, s.rstd2);
    // The residual carries d(residual2) to hidden1 unchanged; the FFN branch gets it through dropout.
    ops::copy_rows(a.d_hidden, a.d_scratch);
    ops::dropout_backward(a.d_scratch, a.d_scratch, dr.hidden, key(dr, site_ffn(int64_t(li))));
    ops::fill_zero(a.d_ffn);
    ops::linear_backward(a.d_ffn, grad(w.ffn_out_weight), grad(w.ffn_out_bias), a.d_scratch, s.ffn_act,
                         weight(w.ffn_out_weight));
    lora_bwd(m, w.ffn_out_lora, a.d_ffn, a.d_scratch, s.ffn_act, a, dr);
    if (a.unit_gradients.ffn) a.unit_gradients.ffn(int(li), s.ffn_act, a.d_ffn);
    // d(pre-activation) goes into ffn_act's buffer, which the backward no longer needs.
    if (a.fused && m.config.hidden_act != "relu") {
      ops::bias_gelu_backward(s.ffn_act, grad(w.ffn_in_bias), s.ffn_pre, a.d_ffn);
      ops::linear_backward(a.d_hidden, grad(w.ffn_in_weight), kNone, s.ffn_act, s.hidden1, weight(w.ffn_in_weight));
    } else {
      ops::fill_zero(s.ffn_act);
      if (m.config.hidden_act == "relu") ops::relu_backward(s.ffn_act, s.ffn_pre, a.d_ffn);
      else ops::gelu_backward(s.ffn_act, s.ffn_pre, a.d_ffn);
      ops::linear_backward(a.d_hidden, grad(w.ffn_in_weight), grad(w.ffn_in_bias), s.ffn_act, s.hidden1,
                           weight(w.ffn_in_weight));
    }
    lora_bwd(m, w.ffn_in_lora, a.d_hidden, s.ffn_act, s.hidden1, a, dr);
  }
  core::Span span(core::SpanKind::module, "attention");
  ops::fill_zero(a.d_scratch);
  ops::layer_norm_backward(a.d_scratch, grad(w.ln1_gamma), grad(w.ln1_beta), a.d_hidden, s.residual1,
                           w.ln1_gamma->value, s.mean1, s.rstd1);
  ops::copy_rows(a.d_hidden, a.d_scratch);
  if (m.family().attention_output_dropout)
    ops::dropout_backward(a.d_scratch, a.d_scratch, dr.hidden, key(dr, site_attention_output(int64_t(li))));
  // d(context) [N, A] goes into residual1's buffer (s.d_context_rows and s.d_context view it), no longer needed.
  ops::fill_zero(s.d_context_rows);
  ops::linear_backward(s.d_context_rows, grad(w.out_weight), grad(w.out_bias), a.d_scratch, s.context,
                       weight(w.out_weight));
  lora_bwd(m, w.out_lora, s.d_context_rows, a.d_scratch, s.context, a, dr);
  if (a.unit_gradients.attention) a.unit_gradients.attention(int(li), s.context, s.d_context_rows);
  ops::attention_backward(s.d_q, s.d_k, s.d_v, bias_grad(m), a.d_bias_parts, s.d_context, s.probs, s.q, s.k, s.v, mask,
                          int(H), scale, dr.attention, key(dr, site_attention_probs(int64_t(li))), bias_table(m),
                          a.buckets, s.attention_out);
  // The first layer's dX feeds only the embeddings: when they are frozen (LoRA), skip it.
  const Tensor& dx = li == 0 && embeddings_frozen ? kNone : a.d_hidden;
  ops::linear_backward(dx, grad(w.qkv_weight), grad(w.qkv_bias), s.d_qkv, s.input, weight(w.qkv_weight));
  lora_bwd(m, w.qkv_lora, dx, s.d_qkv, s.input, a, dr);
  if (a.layer_grads_ready) a.layer_grads_ready(int(li));
}

// The sequence classifier's backward, from d_logits [B, L] to d(first tokens) [B, C] in a.d_head.
void sequence_head_backward(TrainableEncoder& m, EncoderActivations& a, const Tensor& d_logits,
                            const DropoutRates& dr) {
  core::Span head_span(core::SpanKind::module, "classifier");
  ops::fill_zero(a.d_head);
  ops::linear_backward(a.d_head, grad(m.classifier_weight), grad(m.classifier_bias), d_logits, a.head_dropped,
                       m.classifier_weight->value);
  ops::dropout_backward(a.d_head, a.d_head, dr.classifier, key(dr, site_head(m.shape.layers)));
  // Through the activation, from its saved output: d_first holds d(dense output).
  ops::fill_zero(a.d_first);
  if (m.family().head_activation == model::HeadActivation::tanh) ops::tanh_backward(a.d_first, a.head_hidden, a.d_head);
  else ops::relu_backward(a.d_first, a.head_hidden, a.d_head);
  ops::fill_zero(a.d_head);
  const Tensor& head_in = m.family().dropout_before_head_dense ? a.first_dropped : a.first;
  ops::linear_backward(a.d_head, grad(m.head_dense_weight), grad(m.head_dense_bias), a.d_first, head_in,
                       weight(m.head_dense_weight));
  lora_bwd(m, m.head_dense_lora, a.d_head, a.d_first, head_in, a, dr);
  if (m.family().dropout_before_head_dense)
    ops::dropout_backward(a.d_head, a.d_head, dr.classifier, key(dr, site_head_input(m.shape.layers)));
}

// What the head's dense layer reads: a.first, or (RoBERTa) a.first after its own dropout.
const Tensor& head_input(const TrainableEncoder& m, EncoderActivations& a, const DropoutRates& dr) {
  if (!m.family().dropout_before_head_dense) return a.first;
  ops::dropout_forward(a.first_dropped, a.first, dr.classifier, key(dr, site_head_input(int64_t(m.layers.size()))));
  return a.first_dropped;
}

// The token types a batch names, or zeros.
const Tensor& token_types(const EncoderActivations& a, const TokenBatch& batch) {
  return batch.token_type_ids.defined() ? batch.token_type_ids : a.zero_types;
}

}  // namespace

void TrainableEncoder::prepare_batch(ForwardState& state, const TokenBatch& host_batch) const {
  // A batch already on a GPU is left to the forward, which checks it from a copy.
  if (host_batch.input_ids.defined() && !(host_batch.input_ids.device() == Device::cpu())) return;
  model::check_batch(host_batch, shape);
  state.prepared_position_ids = model::encoder_position_ids(host_batch.input_ids, shape).on(device);
}

void trainable_forward(const TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch,
                       const DropoutRates& dr) {
  // The batch's values are checked, and RoBERTa's positions (which count the ids that are not
  // padding) made, in host memory: by the data phase where the collator made the batch
  // (prepare_batch: the step then reads device tensors only), else here, from a host copy (on a
  // GPU one copy each of the ids, the mask and the types, and the positions back).
  Tensor positions = std::exchange(a.prepared_position_ids, Tensor());
  if (!positions.defined()) {
    const TokenBatch host = batch.on(Device::cpu());
    model::check_batch(host, m.shape);
    positions = model::encoder_position_ids(host.input_ids, m.shape).on(batch.input_ids.device());
  }
  check(positions.shape() == batch.input_ids.shape() && positions.device() == batch.input_ids.device(),
        "encoder forward: the data phase's position ids " + positions.describe() + " are not for the batch " +
            batch.input_ids.describe());
  const int64_t B = batch.batch(), T = batch.seq_len();
  prepare_activations(a, m, B, T);
  const Tensor& ids = batch.input_ids;
  const Tensor& mask = batch.attention_mask;

  std::optional<core::Span> model_span(std::in_place, core::SpanKind::module, m.family().module);
  {
    core::Span span(core::SpanKind::module, "embeddings");
    a.position_ids = std::move(positions);  // kept for the backward's position gradients
    if (m.token_type)
      ops::embedding_forward_train(
          a.emb_sum,
          {{ids, m.word->value}, {a.position_ids, m.position->value}, {token_types(a, batch), m.token_type->value}});
    else ops::embedding_forward_train(a.emb_sum, {{ids, m.word->value}, {a.position_ids, m.position->value}});
    ops::layer_norm_forward_train(a.layers[0].input, a.emb_sum, m.emb_ln_gamma->value, layer_norm_beta(m.emb_ln_beta),
                                  m.shape.eps, a.emb_mean, a.emb_rstd);
  }
  ops::dropout_forward(a.layers[0].input, a.layers[0].input, dr.hidden, key(dr, site_embeddings()));

  for (size_t li = 0; li < m.layers.size(); ++li) layer_forward(m, a, li, mask, dr);
  if (m.per_token()) {
    // a.sequence_output [N, C]: the last layer's output at every token.
    token_head_forward(m, a, dr, key(dr, site_head(m.shape.layers)));
    return;
  }

  // The head on the first token: BERT's pooler (tanh), DistilBERT's pre_classifier (ReLU),
  // RoBERTa's classifier.dense (tanh, after a dropout of its own).
  core::Span head_span(core::SpanKind::module, "classifier");
  // a.first [B, C] is the last layer's output at each row's first token (last_layer_forward).
  const Tensor& head_in = head_input(m, a, dr);
  ops::linear_forward_train(a.head_hidden, head_in, weight(m.head_dense_weight), m.head_dense_bias->value);
  lora_fwd(m, m.head_dense_lora, a.head_hidden, head_in, a, dr);
  if (m.family().head_activation == model::HeadActivation::tanh) ops::tanh_forward(a.head_hidden, a.head_hidden);
  else ops::relu_forward(a.head_hidden, a.head_hidden);
  ops::dropout_forward(a.head_dropped, a.head_hidden, dr.classifier, key(dr, site_head(m.shape.layers)));
  ops::linear_forward_train(a.logits, a.head_dropped, m.classifier_weight->value, m.classifier_bias->value);
}

void trainable_backward(TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch, const Tensor& d_logits,
                        const DropoutRates& dr) {
  const Tensor& mask = batch.attention_mask;
  // The caller's "backward" scope (train_step.cc) prefixes these module paths.
  const bool embeddings_frozen = !grad(m.word).defined() && !grad(m.position).defined() &&
                                 !(m.token_type && grad(m.token_type).defined()) && !grad(m.emb_ln_gamma).defined() &&
                                 !grad(m.emb_ln_beta).defined();
  size_t first_full = m.layers.size();  // the layers below the head that run on every token
  if (m.per_token()) {
    // Every token reaches the head: a.d_hidden = d(sequence output) [N, C].
    token_head_backward(m, a, d_logits, dr, key(dr, site_head(m.shape.layers)));
  } else {
    sequence_head_backward(m, a, d_logits, dr);
    core::Span model_span(core::SpanKind::module, m.family().module);
    // Only the first token of each row reaches the head: the last layer's backward starts there.
    const size_t last = m.layers.size() - 1;
    if (a.checkpoint) {
      core::Span span(core::SpanKind::module, "recompute");
      layer_forward(m, a, last, mask, dr);
    }
    last_layer_backward(m, a, last, mask, dr, a.d_head);
    if (a.layer_grads_ready) a.layer_grads_ready(int(last));
    first_full = last;
  }
  core::Span model_span(core::SpanKind::module, m.family().module);
  for (size_t li = first_full; li-- > 0;) {
    if (a.checkpoint) {
      // The layer's intermediates were overwritten by the layers after it: recompute them.
      core::Span span(core::SpanKind::module, "recompute");
      layer_forward(m, a, li, mask, dr);
    }
    full_layer_backward(m, a, li, mask, dr, embeddings_frozen);
  }
  if (embeddings_frozen && m.layers.size() > 1) return;

  core::Span span(core::SpanKind::module, "embeddings");
  ops::dropout_backward(a.d_hidden, a.d_hidden, dr.hidden, key(dr, site_embeddings()));
  ops::fill_zero(a.d_scratch);
  ops::layer_norm_backward(a.d_scratch, grad(m.emb_ln_gamma), m.emb_ln_beta ? grad(m.emb_ln_beta) : kNone, a.d_hidden,
                           a.emb_sum, m.emb_ln_gamma->value, a.emb_mean, a.emb_rstd);
  // RoBERTa's nn.Embedding(padding_idx=pad) leaves the pad position's row without a gradient.
  const Tensor& types = token_types(a, batch);
  ops::embedding_backward(a.d_scratch, {{grad(m.word), batch.input_ids, int32_t(m.config.pad_token_id)},
                                        {grad(m.position), a.position_ids, int32_t(m.shape.position_pad)},
                                        {m.token_type ? grad(m.token_type) : kNone, types, -1}});
}

}  // namespace tach::train
