// The per-token heads' training forward and backward, on the last layer's output at every token
// (a.sequence_output [N, C], N = B·T):
//   token classification   logits [N, L] = classifier(dropout(h))
//   question answering     logits [N, 2] = qa_outputs(h) (start, end); DistilBERT drops out h first
//   masked LM              logits [N, V] = decoder(LayerNorm(act(dense(h)))) + bias, the decoder
//                          being the word embeddings where tied (its gradient adds to theirs)
// as transformers' …ForTokenClassification, …ForQuestionAnswering and …ForMaskedLM compute them.
// The backward leaves d(sequence output) in a.d_hidden for the layers' backward.
#include <cstring>

#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "train/step_support.h"
#include "train/trainable_encoder.h"

namespace tach::train {

namespace {

using step::f;
using step::g;
using step::zero;

const char* head_module(const TrainableEncoder& m) {
  return m.task == Head::masked_lm ? "lm_head" : m.task == Head::question_answering ? "qa_outputs" : "classifier";
}

// The dropout before a classifier or qa_outputs reads h: its input, copied and dropped out, or h itself.
const Tensor& dropped_input(EncoderActivations& a, float p, uint64_t key) {
  if (p <= 0.f) return a.sequence_output;
  OpSpan s("dropout", ops::dropout_cost(a.sequence_output.numel()));
  ops::dropout_forward_cpu(f(a.token_dropped), f(a.sequence_output), a.sequence_output.numel(), p, key);
  return a.token_dropped;
}

}  // namespace

void token_head_forward(const TrainableEncoder& m, EncoderActivations& a, const DropoutRates& dr, uint64_t key) {
  const int64_t N = a.B * a.T, C = m.shape.hidden;
  core::Span span(core::SpanKind::module, head_module(m));
  if (m.task != Head::masked_lm) {
    const int64_t L = a.logits.shape()[1];
    const Tensor& x = dropped_input(a, dr.head, key);
    OpSpan o("linear", ops::linear_cost(N, L, C, DType::f32, true));
    ops::linear_forward_cpu(f(a.logits), f(x), f(m.classifier_weight), f(m.classifier_bias), N, L, C);
    return;
  }
  const int64_t V = m.config.vocab_size;
  step::linear_forward(f(a.mlm_pre), f(a.sequence_output), step::wt(m.mlm_dense_weight), f(m.mlm_dense_bias), N, C, C);
  if (m.lora) m.lora->forward(m.mlm_dense_lora, f(a.mlm_pre), C, f(a.sequence_output), N, a.lora, dr);
  if (m.mlm_gelu) {
    OpSpan o("gelu", ops::gelu_cost(N * C));
    ops::gelu_forward_cpu(f(a.mlm_act), f(a.mlm_pre), N * C);
  } else {
    OpSpan o("relu", ops::activation_cost(N * C));
    ops::relu_forward_cpu(f(a.mlm_act), f(a.mlm_pre), N * C);
  }
  {
    OpSpan o("layer_norm", ops::layer_norm_cost(N, C, false));
    ops::layer_norm_forward_cpu(f(a.mlm_hidden), f(a.mlm_act), nullptr, f(m.mlm_norm_gamma), f(m.mlm_norm_beta), N, C,
                                m.shape.eps, f(a.mlm_mean), f(a.mlm_rstd));
  }
  OpSpan o("linear", ops::linear_cost(N, V, C, DType::f32, true));
  ops::linear_forward_cpu(f(a.logits), f(a.mlm_hidden), f(m.mlm_decoder), f(m.mlm_bias), N, V, C);
}

void token_head_backward(TrainableEncoder& m, EncoderActivations& a, const float* d_logits, const DropoutRates& dr,
                         uint64_t key) {
  const int64_t N = a.B * a.T, C = m.shape.hidden;
  core::Span span(core::SpanKind::module, head_module(m));
  zero(a.d_hidden);
  if (m.task != Head::masked_lm) {
    const int64_t L = a.logits.shape()[1];
    const Tensor& x = dr.head > 0.f ? a.token_dropped : a.sequence_output;
    step::linear_backward(f(a.d_hidden), g(m.classifier_weight), g(m.classifier_bias), d_logits, f(x),
                          f(m.classifier_weight), N, L, C);
    if (dr.head > 0.f) {
      OpSpan s("dropout_backward", ops::dropout_cost(N * C));
      ops::dropout_backward_cpu(f(a.d_hidden), f(a.d_hidden), N * C, dr.head, key);
    }
    return;
  }
  const int64_t V = m.config.vocab_size;
  // d(LayerNorm output) [N, C] in d_scratch; the decoder's weight gradient goes to the word
  // embeddings' where tied.
  zero(a.d_scratch);
  step::linear_backward(f(a.d_scratch), g(m.mlm_decoder), g(m.mlm_bias), d_logits, f(a.mlm_hidden), f(m.mlm_decoder), N,
                        V, C);
  {
    OpSpan o("layer_norm_backward", ops::layer_norm_cost(N, C, false));
    ops::layer_norm_backward_cpu(f(a.d_hidden), g(m.mlm_norm_gamma), g(m.mlm_norm_beta), f(a.d_scratch), f(a.mlm_act),
                                 f(m.mlm_norm_gamma), f(a.mlm_mean), f(a.mlm_rstd), N, C);
  }
  // d(dense output) into d_scratch.
  zero(a.d_scratch);
  if (m.mlm_gelu) {
    OpSpan o("gelu_backward", ops::gelu_backward_cost(N * C));
    ops::gelu_backward_cpu(f(a.d_scratch), f(a.mlm_pre), f(a.d_hidden), N * C);
  } else {
    OpSpan o("relu_backward", ops::activation_backward_cost(N * C));
    ops::relu_backward_cpu(f(a.d_scratch), f(a.mlm_act), f(a.d_hidden), N * C);
  }
  zero(a.d_hidden);
  step::linear_backward(f(a.d_hidden), g(m.mlm_dense_weight), g(m.mlm_dense_bias), f(a.d_scratch), f(a.sequence_output),
                        step::wt(m.mlm_dense_weight), N, C, C);
  if (m.lora) m.lora->backward(m.mlm_dense_lora, f(a.d_hidden), f(a.d_scratch), C, f(a.sequence_output), N, a.lora, dr);
}

}  // namespace tach::train
