// The per-token heads' training forward and backward, on the last layer's output at every token
// (a.sequence_output [N, C], N = B·T):
//   token classification   logits [N, L] = classifier(dropout(h))
//   question answering     logits [N, 2] = qa_outputs(h) (start, end); DistilBERT drops out h first
//   masked LM              logits [M, V] = decoder(LayerNorm(act(dense(h)))) + bias, the decoder
//                          being the word embeddings where tied (its gradient adds to theirs), on
//                          the M predicted rows alone (ForwardState::predicted_rows; all N if none)
// as transformers' …ForTokenClassification, …ForQuestionAnswering and …ForMaskedLM compute them.
// The backward leaves d(sequence output) in a.d_hidden for the layers' backward.
#include "core/trace.h"
#include "ops/activation.h"
#include "ops/copy_rows.h"
#include "ops/dropout.h"
#include "ops/fill.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "train/step_support.h"
#include "train/trainable_encoder.h"

namespace tach::train {

namespace {

using step::grad;
using step::weight;

const char* head_module(const TrainableEncoder& m) {
  return m.task == Head::masked_lm ? "lm_head" : m.task == Head::question_answering ? "qa_outputs" : "classifier";
}

// The dropout before a classifier or qa_outputs reads h: its input, dropped out into a copy, or h itself.
const Tensor& dropped_input(EncoderActivations& a, float p, uint64_t key) {
  if (p <= 0.f) return a.sequence_output;
  ops::dropout_forward(a.token_dropped, a.sequence_output, p, key);
  return a.token_dropped;
}

// The masked LM's predicted rows [M] i32 (b * T + t), as the ops take them on `device`: a view of
// the list the caller set (host memory; it lives as long as the step), or its copy on a GPU.
Tensor predicted_rows(const EncoderActivations& a, Device device) {
  const std::vector<int32_t>& rows = a.predicted_rows;
  return Tensor::from_borrowed(const_cast<int32_t*>(rows.data()), {int64_t(rows.size())}, DType::i32, nullptr)
      .on(device, MemoryCategory::activations);
}

// The first M rows of a [N, ...] buffer: the masked LM runs on M of the N tokens.
Tensor first(const Tensor& t, int64_t M) { return t.shape()[0] == M ? t : t.narrow(0, 0, M); }

}  // namespace

void token_head_forward(const TrainableEncoder& m, EncoderActivations& a, const DropoutRates& dr, uint64_t key) {
  const int64_t N = a.B * a.T;
  core::Span span(core::SpanKind::module, head_module(m));
  if (m.task != Head::masked_lm) {
    const Tensor& x = dropped_input(a, dr.head, key);
    ops::linear_forward_train(a.logits, x, m.classifier_weight->value, m.classifier_bias->value);
    return;
  }
  // The masked LM on the predicted rows only (all of them when none are named): M of N.
  const int64_t V = m.config.vocab_size;
  const bool some = !a.predicted_rows.empty();
  const int64_t M = some ? int64_t(a.predicted_rows.size()) : N;
  if (a.logits.shape()[0] != M) a.logits = Tensor::empty({M, V}, DType::f32, m.device, MemoryCategory::activations);
  if (M == 0) return;
  Tensor x = a.sequence_output;
  if (some) {
    x = first(a.mlm_input, M);
    ops::gather_rows(x, a.sequence_output, predicted_rows(a, m.device));
  }
  const Tensor pre = first(a.mlm_pre, M), act = first(a.mlm_act, M), hidden = first(a.mlm_hidden, M);
  ops::linear_forward_train(pre, x, weight(m.mlm_dense_weight), m.mlm_dense_bias->value);
  if (m.lora) m.lora->forward(m.mlm_dense_lora, pre, x, a.lora, dr);
  if (m.mlm_gelu) ops::gelu_forward(act, pre);
  else ops::relu_forward(act, pre);
  ops::layer_norm_forward_train(hidden, act, m.mlm_norm_gamma->value, m.mlm_norm_beta->value, m.shape.eps,
                                first(a.mlm_mean, M), first(a.mlm_rstd, M));
  ops::linear_forward_train(a.logits, hidden, m.mlm_decoder->value, m.mlm_bias->value);
}

void token_head_backward(TrainableEncoder& m, EncoderActivations& a, const Tensor& d_logits, const DropoutRates& dr,
                         uint64_t key) {
  const int64_t N = a.B * a.T;
  core::Span span(core::SpanKind::module, head_module(m));
  ops::fill_zero(a.d_hidden);
  if (m.task != Head::masked_lm) {
    const Tensor& x = dr.head > 0.f ? a.token_dropped : a.sequence_output;
    ops::linear_backward(a.d_hidden, grad(m.classifier_weight), grad(m.classifier_bias), d_logits, x,
                         m.classifier_weight->value);
    if (dr.head > 0.f) ops::dropout_backward(a.d_hidden, a.d_hidden, dr.head, key);
    return;
  }
  const bool some = !a.predicted_rows.empty();
  const int64_t M = some ? int64_t(a.predicted_rows.size()) : N;
  if (M == 0) return;  // no token chosen: no loss, no gradient
  const Tensor& x = some ? first(a.mlm_input, M) : a.sequence_output;
  const Tensor d_scratch = first(a.d_scratch, M), d_hidden = first(a.d_hidden, M);
  const Tensor pre = first(a.mlm_pre, M), act = first(a.mlm_act, M), hidden = first(a.mlm_hidden, M);
  // d(LayerNorm output) [M, C] in d_scratch; the decoder's weight gradient goes to the word
  // embeddings' where tied.
  ops::fill_zero(a.d_scratch);
  ops::linear_backward(d_scratch, grad(m.mlm_decoder), grad(m.mlm_bias), d_logits, hidden, m.mlm_decoder->value);
  ops::layer_norm_backward(d_hidden, grad(m.mlm_norm_gamma), grad(m.mlm_norm_beta), d_scratch, act,
                           m.mlm_norm_gamma->value, first(a.mlm_mean, M), first(a.mlm_rstd, M));
  // d(dense output) into d_scratch.
  ops::fill_zero(a.d_scratch);
  if (m.mlm_gelu) ops::gelu_backward(d_scratch, pre, d_hidden);
  else ops::relu_backward(d_scratch, act, d_hidden);
  // d(dense input) [M, C]: straight into d_hidden for every token, else into mlm_act's buffer (no
  // longer needed) and scattered to the predicted rows of d_hidden, zero elsewhere.
  const Tensor dx = some ? act : a.d_hidden;
  ops::fill_zero(a.d_hidden);
  if (some) ops::fill_zero(dx);
  ops::linear_backward(dx, grad(m.mlm_dense_weight), grad(m.mlm_dense_bias), d_scratch, x, weight(m.mlm_dense_weight));
  if (m.lora) m.lora->backward(m.mlm_dense_lora, dx, d_scratch, x, a.lora, dr);
  if (some) ops::scatter_rows(a.d_hidden, predicted_rows(a, m.device), dx);
}

}  // namespace tach::train
