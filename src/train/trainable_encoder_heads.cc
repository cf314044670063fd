// The per-token heads' training forward and backward, on the last layer's output at every token
// (a.sequence_output [N, C], N = B·T):
//   token classification   logits [N, L] = classifier(dropout(h))
//   question answering     logits [N, 2] = qa_outputs(h) (start, end); DistilBERT drops out h first
//   masked LM              logits [M, V] = decoder(LayerNorm(act(dense(h)))) + bias, the decoder
//                          being the word embeddings where tied (its gradient adds to theirs), on
//                          the M predicted rows alone (ForwardState::predicted_rows; all N if none)
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
  // The masked LM on the predicted rows only (all of them when none are named): M of N.
  const int64_t V = m.config.vocab_size;
  const std::vector<int32_t>& rows = a.predicted_rows;
  const int64_t M = rows.empty() ? N : int64_t(rows.size());
  if (a.logits.shape()[0] != M)
    a.logits = Tensor::empty({M, V}, DType::f32, Device::cpu(), MemoryCategory::activations);
  if (M == 0) return;
  const float* x = f(a.sequence_output);
  if (!rows.empty()) {
    for (int64_t r = 0; r < M; ++r)
      std::memcpy(f(a.mlm_input) + r * C, f(a.sequence_output) + int64_t(rows[size_t(r)]) * C,
                  sizeof(float) * size_t(C));
    x = f(a.mlm_input);
  }
  step::linear_forward(f(a.mlm_pre), x, step::wt(m.mlm_dense_weight), f(m.mlm_dense_bias), M, C, C);
  if (m.lora) m.lora->forward(m.mlm_dense_lora, f(a.mlm_pre), C, x, M, a.lora, dr);
  if (m.mlm_gelu) {
    OpSpan o("gelu", ops::gelu_cost(M * C));
    ops::gelu_forward_cpu(f(a.mlm_act), f(a.mlm_pre), M * C);
  } else {
    OpSpan o("relu", ops::activation_cost(M * C));
    ops::relu_forward_cpu(f(a.mlm_act), f(a.mlm_pre), M * C);
  }
  {
    OpSpan o("layer_norm", ops::layer_norm_cost(M, C, false));
    ops::layer_norm_forward_cpu(f(a.mlm_hidden), f(a.mlm_act), nullptr, f(m.mlm_norm_gamma), f(m.mlm_norm_beta), M, C,
                                m.shape.eps, f(a.mlm_mean), f(a.mlm_rstd));
  }
  OpSpan o("linear", ops::linear_cost(M, V, C, DType::f32, true));
  ops::linear_forward_cpu(f(a.logits), f(a.mlm_hidden), f(m.mlm_decoder), f(m.mlm_bias), M, V, C);
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
  const std::vector<int32_t>& rows = a.predicted_rows;
  const int64_t M = rows.empty() ? N : int64_t(rows.size());
  if (M == 0) return;  // no token chosen: no loss, no gradient
  const float* x = rows.empty() ? f(a.sequence_output) : f(a.mlm_input);
  // d(LayerNorm output) [M, C] in d_scratch; the decoder's weight gradient goes to the word
  // embeddings' where tied.
  zero(a.d_scratch);
  step::linear_backward(f(a.d_scratch), g(m.mlm_decoder), g(m.mlm_bias), d_logits, f(a.mlm_hidden), f(m.mlm_decoder), M,
                        V, C);
  {
    OpSpan o("layer_norm_backward", ops::layer_norm_cost(M, C, false));
    ops::layer_norm_backward_cpu(f(a.d_hidden), g(m.mlm_norm_gamma), g(m.mlm_norm_beta), f(a.d_scratch), f(a.mlm_act),
                                 f(m.mlm_norm_gamma), f(a.mlm_mean), f(a.mlm_rstd), M, C);
  }
  // d(dense output) into d_scratch.
  zero(a.d_scratch);
  if (m.mlm_gelu) {
    OpSpan o("gelu_backward", ops::gelu_backward_cost(M * C));
    ops::gelu_backward_cpu(f(a.d_scratch), f(a.mlm_pre), f(a.d_hidden), M * C);
  } else {
    OpSpan o("relu_backward", ops::activation_backward_cost(M * C));
    ops::relu_backward_cpu(f(a.d_scratch), f(a.mlm_act), f(a.d_hidden), M * C);
  }
  // d(dense input) [M, C]: straight into d_hidden for every token, else into mlm_act's buffer (no
  // longer needed) and scattered to the predicted rows of d_hidden, zero elsewhere.
  float* dx = rows.empty() ? f(a.d_hidden) : f(a.mlm_act);
  zero(a.d_hidden);
  if (!rows.empty()) std::memset(dx, 0, sizeof(float) * size_t(M * C));
  step::linear_backward(dx, g(m.mlm_dense_weight), g(m.mlm_dense_bias), f(a.d_scratch), x, step::wt(m.mlm_dense_weight),
                        M, C, C);
  if (m.lora) m.lora->backward(m.mlm_dense_lora, dx, f(a.d_scratch), C, x, M, a.lora, dr);
  for (int64_t r = 0; r < M && !rows.empty(); ++r)
    std::memcpy(f(a.d_hidden) + int64_t(rows[size_t(r)]) * C, dx + r * C, sizeof(float) * size_t(C));
}

}  // namespace tach::train
