// The training forward and its backward, in reverse order of the same calls. Every op is an
// ops/ kernel; the spans name module paths as transformers does, under "backward." for the
// backward, so a trace and the op table say where time goes in both directions.
#include <cmath>
#include <cstring>
#include <optional>

#include "core/parallel.h"
#include "core/trace.h"
#include "ops/activation.h"
#include "ops/add.h"
#include "ops/attention.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "train/step_support.h"
#include "train/trainable_encoder.h"

namespace tach::train {

namespace {

using step::f;
using step::g;
using step::wt;
using step::zero;

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

void dropout_fwd(float* x, int64_t n, float p, uint64_t k) {
  if (p <= 0.f) return;
  OpSpan s("dropout", ops::dropout_cost(n));
  ops::dropout_forward_cpu(x, x, n, p, k);
}

void dropout_bwd(float* dx, int64_t n, float p, uint64_t k) {
  if (p <= 0.f) return;
  OpSpan s("dropout_backward", ops::dropout_cost(n));
  ops::dropout_backward_cpu(dx, dx, n, p, k);
}

// The LoRA adapters of an engine linear (none in full fine-tuning): forward adds to its output,
// backward adds to its input's gradient and fills the adapters' own.
void lora_fwd(const TrainableEncoder& m, const std::vector<int64_t>& ids, float* y, int64_t ldy, const float* x,
              int64_t M, EncoderActivations& a, const DropoutRates& dr) {
  if (m.lora) m.lora->forward(ids, y, ldy, x, M, a.lora, dr);
}

void lora_bwd(const TrainableEncoder& m, const std::vector<int64_t>& ids, float* dx, const float* dy, int64_t ldy,
              const float* x, int64_t M, EncoderActivations& a, const DropoutRates& dr) {
  if (m.lora) m.lora->backward(ids, dx, dy, ldy, x, M, a.lora, dr);
}

// MPNet's relative position bias on the scores, or none.
ops::ScoreBias score_bias(const TrainableEncoder& m, const EncoderActivations& a) {
  if (!m.relative_bias) return {};
  return {a.buckets.data(), f(m.relative_bias), m.shape.relative_buckets};
}

// The d_bias_parts [B, H, buckets] that a layer's attention backward wrote, summed over the batch
// in order into the table's gradient [buckets, H] (every layer adds its share).
void add_relative_bias_grad(TrainableEncoder& m, EncoderActivations& a) {
  float* grad = g(m.relative_bias);
  if (!grad) return;
  const int64_t H = m.shape.heads, NB = m.shape.relative_buckets;
  const float* parts = f(a.d_bias_parts);
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t k = 0; k < NB; ++k) grad[k * H + h] += parts[(b * H + h) * NB + k];
}

// The bias gradient's destination for the attention backward: null when the table is frozen.
float* relative_bias_parts(TrainableEncoder& m, EncoderActivations& a) {
  return m.relative_bias && g(m.relative_bias) ? f(a.d_bias_parts) : nullptr;
}

// One layer's forward over every token: from a.layers[li].input to the next layer's input,
// keeping what its backward needs.
void full_layer_forward(const TrainableEncoder& m, EncoderActivations& a, size_t li, const int32_t* mask,
                        const DropoutRates& dr) {
  const int64_t B = a.B, T = a.T, C = m.shape.hidden, I = m.shape.intermediate;
  const int64_t H = m.shape.heads, D = C / H, N = B * T;
  const float eps = m.shape.eps, scale = 1.0f / std::sqrt(float(D));
  const TrainableLayer& w = m.layers[li];
  LayerActivations& s = a.layers[li];
  // The next layer's input; after the last layer (a per-token head's), the sequence output.
  const Tensor& out = li + 1 < a.layers.size() ? a.layers[li + 1].input : a.sequence_output;
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  {
    core::Span span(core::SpanKind::module, "attention");
    step::linear_forward(f(s.qkv), f(s.input), wt(w.qkv_weight), f(w.qkv_bias.value), N, 3 * C, C);
    lora_fwd(m, w.qkv_lora, f(s.qkv), 3 * C, f(s.input), N, a, dr);
    {
      OpSpan o("attention", ops::attention_cost(B, T, H, D, -1, m.relative_bias != nullptr));
      ops::attention_forward_train_cpu(f(s.context), a.fused ? nullptr : f(s.probs), f(s.qkv), f(s.qkv) + C,
                                       f(s.qkv) + 2 * C, mask, B, T, H, D, 3 * C, C, scale, dr.attention,
                                       key(dr, site_attention_probs(int64_t(li))), -1, score_bias(m, a));
    }
    // BERT and RoBERTa drop out the attention output (BertSelfOutput); DistilBERT does not.
    const float out_p = m.family().attention_output_dropout ? dr.hidden : 0.f;
    const uint64_t out_key = key(dr, site_attention_output(int64_t(li)));
    if (a.fused) {
      // The projection goes to a scratch buffer (d_scratch is free in the forward), then one pass.
      step::linear_forward(f(a.d_scratch), f(s.context), wt(w.out_weight), f(w.out_bias), N, C, C);
      lora_fwd(m, w.out_lora, f(a.d_scratch), C, f(s.context), N, a, dr);
      OpSpan o("dropout_add_layer_norm", ops::layer_norm_cost(N, C, true));
      ops::dropout_add_layer_norm_forward_cpu(f(s.residual1), f(s.hidden1), f(a.d_scratch), f(s.input), f(w.ln1_gamma),
                                              f(w.ln1_beta), N, C, eps, out_p, out_key, f(s.mean1), f(s.rstd1));
    } else {
      step::linear_forward(f(s.residual1), f(s.context), wt(w.out_weight), f(w.out_bias), N, C, C);
      lora_fwd(m, w.out_lora, f(s.residual1), C, f(s.context), N, a, dr);
      dropout_fwd(f(s.residual1), N * C, out_p, out_key);
      ops::add_inplace(f(s.residual1), f(s.input), N * C);
      OpSpan o("layer_norm", ops::layer_norm_cost(N, C, true));
      ops::layer_norm_forward_cpu(f(s.hidden1), f(s.residual1), nullptr, f(w.ln1_gamma), f(w.ln1_beta), N, C, eps,
                                  f(s.mean1), f(s.rstd1));
    }
  }
  core::Span span(core::SpanKind::module, "ffn");
  const bool gelu = m.config.hidden_act != "relu";
  if (a.fused && gelu) {
    step::linear_forward(f(s.ffn_pre), f(s.hidden1), wt(w.ffn_in_weight), nullptr, N, I, C);
    lora_fwd(m, w.ffn_in_lora, f(s.ffn_pre), I, f(s.hidden1), N, a, dr);
    OpSpan o("bias_gelu", ops::gelu_cost(N * I));
    ops::bias_gelu_forward_cpu(f(s.ffn_pre), f(s.ffn_act), f(w.ffn_in_bias), N, I);
  } else {
    step::linear_forward(f(s.ffn_pre), f(s.hidden1), wt(w.ffn_in_weight), f(w.ffn_in_bias), N, I, C);
    lora_fwd(m, w.ffn_in_lora, f(s.ffn_pre), I, f(s.hidden1), N, a, dr);
    if (gelu) {
      OpSpan o("gelu", ops::gelu_cost(N * I));
      ops::gelu_forward_cpu(f(s.ffn_act), f(s.ffn_pre), N * I);
    } else {
      OpSpan o("relu", ops::activation_cost(N * I));
      ops::relu_forward_cpu(f(s.ffn_act), f(s.ffn_pre), N * I);
    }
  }
  if (a.fused) {
    step::linear_forward(f(a.d_scratch), f(s.ffn_act), wt(w.ffn_out_weight), f(w.ffn_out_bias), N, C, I);
    lora_fwd(m, w.ffn_out_lora, f(a.d_scratch), C, f(s.ffn_act), N, a, dr);
    OpSpan o("dropout_add_layer_norm", ops::layer_norm_cost(N, C, true));
    ops::dropout_add_layer_norm_forward_cpu(f(s.residual2), f(out), f(a.d_scratch), f(s.hidden1), f(w.ln2_gamma),
                                            f(w.ln2_beta), N, C, eps, dr.hidden, key(dr, site_ffn(int64_t(li))),
                                            f(s.mean2), f(s.rstd2));
    return;
  }
  step::linear_forward(f(s.residual2), f(s.ffn_act), wt(w.ffn_out_weight), f(w.ffn_out_bias), N, C, I);
  lora_fwd(m, w.ffn_out_lora, f(s.residual2), C, f(s.ffn_act), N, a, dr);
  dropout_fwd(f(s.residual2), N * C, dr.hidden, key(dr, site_ffn(int64_t(li))));
  ops::add_inplace(f(s.residual2), f(s.hidden1), N * C);
  OpSpan o("layer_norm", ops::layer_norm_cost(N, C, true));
  ops::layer_norm_forward_cpu(f(out), f(s.residual2), nullptr, f(w.ln2_gamma), f(w.ln2_beta), N, C, eps, f(s.mean2),
                              f(s.rstd2));
}

// The last layer, for the first token of each row only: the classifier reads nothing else, so
// keys and values are computed for every token and everything after attention (the output
// projection, both LayerNorms, the FFN) for B rows instead of B·T. transformers computes the
// other rows and discards them; the loss and every gradient are the same. Writes a.first [B, C].
void last_layer_forward(const TrainableEncoder& m, EncoderActivations& a, size_t li, const int32_t* mask,
                        const DropoutRates& dr) {
  const int64_t B = a.B, T = a.T, C = m.shape.hidden, I = m.shape.intermediate;
  const int64_t H = m.shape.heads, D = C / H, N = B * T;
  const float eps = m.shape.eps, scale = 1.0f / std::sqrt(float(D));
  const TrainableLayer& w = m.layers[li];
  LayerActivations& s = a.layers[li];
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  {
    core::Span span(core::SpanKind::module, "attention");
    step::linear_forward(f(s.qkv), f(s.input), wt(w.qkv_weight), f(w.qkv_bias.value), N, 3 * C, C);
    lora_fwd(m, w.qkv_lora, f(s.qkv), 3 * C, f(s.input), N, a, dr);
    {
      OpSpan o("attention", ops::attention_cost(B, T, H, D, 1, m.relative_bias != nullptr));
      ops::attention_forward_train_cpu(f(s.context), a.fused ? nullptr : f(s.probs), f(s.qkv), f(s.qkv) + C,
                                       f(s.qkv) + 2 * C, mask, B, T, H, D, 3 * C, C, scale, dr.attention,
                                       key(dr, site_attention_probs(int64_t(li))), 1, score_bias(m, a));
    }
    // context_cls [B, C]: the first token's context of each row
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(f(s.context_cls) + b * C, f(s.context) + b * T * C, sizeof(float) * size_t(C));
    step::linear_forward(f(s.residual1), f(s.context_cls), wt(w.out_weight), f(w.out_bias), B, C, C);
    lora_fwd(m, w.out_lora, f(s.residual1), C, f(s.context_cls), B, a, dr);
    dropout_fwd(f(s.residual1), B * C, m.family().attention_output_dropout ? dr.hidden : 0.f,
                key(dr, site_attention_output(int64_t(li))));
    for (int64_t b = 0; b < B; ++b) ops::add_inplace(f(s.residual1) + b * C, f(s.input) + b * T * C, C);
    OpSpan o("layer_norm", ops::layer_norm_cost(B, C, true));
    ops::layer_norm_forward_cpu(f(s.hidden1), f(s.residual1), nullptr, f(w.ln1_gamma), f(w.ln1_beta), B, C, eps,
                                f(s.mean1), f(s.rstd1));
  }
  core::Span span(core::SpanKind::module, "ffn");
  step::linear_forward(f(s.ffn_pre), f(s.hidden1), wt(w.ffn_in_weight), f(w.ffn_in_bias), B, I, C);
  lora_fwd(m, w.ffn_in_lora, f(s.ffn_pre), I, f(s.hidden1), B, a, dr);
  if (m.config.hidden_act != "relu") {
    OpSpan o("gelu", ops::gelu_cost(B * I));
    ops::gelu_forward_cpu(f(s.ffn_act), f(s.ffn_pre), B * I);
  } else {
    OpSpan o("relu", ops::activation_cost(B * I));
    ops::relu_forward_cpu(f(s.ffn_act), f(s.ffn_pre), B * I);
  }
  step::linear_forward(f(s.residual2), f(s.ffn_act), wt(w.ffn_out_weight), f(w.ffn_out_bias), B, C, I);
  lora_fwd(m, w.ffn_out_lora, f(s.residual2), C, f(s.ffn_act), B, a, dr);
  dropout_fwd(f(s.residual2), B * C, dr.hidden, key(dr, site_ffn(int64_t(li))));
  ops::add_inplace(f(s.residual2), f(s.hidden1), B * C);
  OpSpan o("layer_norm", ops::layer_norm_cost(B, C, true));
  ops::layer_norm_forward_cpu(f(a.first), f(s.residual2), nullptr, f(w.ln2_gamma), f(w.ln2_beta), B, C, eps, f(s.mean2),
                              f(s.rstd2));
}

// Its backward, from d_out = d(a.first) [B, C]; leaves d(layer input) [N, C] in a.d_hidden.
void last_layer_backward(TrainableEncoder& m, EncoderActivations& a, size_t li, const int32_t* mask,
                         const DropoutRates& dr, const float* d_out) {
  const int64_t B = a.B, T = a.T, C = m.shape.hidden, I = m.shape.intermediate;
  const int64_t H = m.shape.heads, D = C / H, N = B * T;
  const float scale = 1.0f / std::sqrt(float(D));
  TrainableLayer& w = m.layers[li];
  LayerActivations& s = a.layers[li];
  float* d1 = f(a.d_cls1);  // [B, C]
  float* d2 = f(a.d_cls2);  // [B, C]
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  {
    core::Span span(core::SpanKind::module, "ffn");
    zero(a.d_cls1);
    {
      OpSpan o("layer_norm_backward", ops::layer_norm_cost(B, C, true));
      ops::layer_norm_backward_cpu(d1, g(w.ln2_gamma), g(w.ln2_beta), d_out, f(s.residual2), f(w.ln2_gamma), f(s.mean2),
                                   f(s.rstd2), B, C);
    }
    // The residual carries d(residual2) to hidden1; the FFN branch gets it through dropout.
    std::memcpy(d2, d1, a.d_cls1.nbytes());
    dropout_bwd(d1, B * C, dr.hidden, key(dr, site_ffn(int64_t(li))));
    zero(a.d_cls_ffn);
    step::linear_backward(f(a.d_cls_ffn), g(w.ffn_out_weight), g(w.ffn_out_bias), d1, f(s.ffn_act),
                          wt(w.ffn_out_weight), B, C, I);
    lora_bwd(m, w.ffn_out_lora, f(a.d_cls_ffn), d1, C, f(s.ffn_act), B, a, dr);
    // d(pre-activation) goes into ffn_act's buffer, which the backward no longer needs.
    zero(s.ffn_act);
    if (m.config.hidden_act == "relu") {
      OpSpan o("relu_backward", ops::activation_backward_cost(B * I));
      ops::relu_backward_cpu(f(s.ffn_act), f(s.ffn_pre), f(a.d_cls_ffn), B * I);
    } else {
      OpSpan o("gelu_backward", ops::gelu_backward_cost(B * I));
      ops::gelu_backward_cpu(f(s.ffn_act), f(s.ffn_pre), f(a.d_cls_ffn), B * I);
    }
    step::linear_backward(d2, g(w.ffn_in_weight), g(w.ffn_in_bias), f(s.ffn_act), f(s.hidden1), wt(w.ffn_in_weight), B,
                          I, C);
    lora_bwd(m, w.ffn_in_lora, d2, f(s.ffn_act), I, f(s.hidden1), B, a, dr);
  }
  core::Span span(core::SpanKind::module, "attention");
  zero(a.d_cls1);
  {
    OpSpan o("layer_norm_backward", ops::layer_norm_cost(B, C, true));
    ops::layer_norm_backward_cpu(d1, g(w.ln1_gamma), g(w.ln1_beta), d2, f(s.residual1), f(w.ln1_gamma), f(s.mean1),
                                 f(s.rstd1), B, C);
  }
  std::memcpy(d2, d1, a.d_cls1.nbytes());  // the residual: d(input) at the first tokens
  if (m.family().attention_output_dropout)
    dropout_bwd(d1, B * C, dr.hidden, key(dr, site_attention_output(int64_t(li))));
  // d(context_cls) into residual1's buffer, no longer needed; then into the first tokens' rows
  // of a full d(context), zero elsewhere.
  zero(s.residual1);
  step::linear_backward(f(s.residual1), g(w.out_weight), g(w.out_bias), d1, f(s.context_cls), wt(w.out_weight), B, C,
                        C);
  lora_bwd(m, w.out_lora, f(s.residual1), d1, C, f(s.context_cls), B, a, dr);
  zero(a.d_scratch);
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(f(a.d_scratch) + b * T * C, f(s.residual1) + b * C, sizeof(float) * size_t(C));
  zero(a.d_qkv);  // the rows of dq after the first token stay zero
  {
    OpSpan o("attention_backward", ops::attention_backward_cost(B, T, H, D, 1));
    ops::attention_backward_cpu(f(a.d_qkv), f(a.d_qkv) + C, f(a.d_qkv) + 2 * C, f(a.d_scratch),
                                a.fused ? nullptr : f(s.probs), f(s.qkv), f(s.qkv) + C, f(s.qkv) + 2 * C, mask, B, T, H,
                                D, 3 * C, C, scale, dr.attention, key(dr, site_attention_probs(int64_t(li))), 1,
                                score_bias(m, a), relative_bias_parts(m, a));
  }
  if (relative_bias_parts(m, a)) add_relative_bias_grad(m, a);
  zero(a.d_hidden);
  step::linear_backward(f(a.d_hidden), g(w.qkv_weight), g(w.qkv_bias), f(a.d_qkv), f(s.input), wt(w.qkv_weight), N,
                        3 * C, C);
  lora_bwd(m, w.qkv_lora, f(a.d_hidden), f(a.d_qkv), 3 * C, f(s.input), N, a, dr);
  for (int64_t b = 0; b < B; ++b) ops::add_inplace(f(a.d_hidden) + b * T * C, d2 + b * C, C);
}

// Layer li's forward; a sequence classifier's last layer runs for the first tokens only.
void layer_forward(const TrainableEncoder& m, EncoderActivations& a, size_t li, const int32_t* mask,
                   const DropoutRates& dr) {
  if (li + 1 == m.layers.size() && !m.per_token()) last_layer_forward(m, a, li, mask, dr);
  else full_layer_forward(m, a, li, mask, dr);
}

// A full layer's backward (every token): a.d_hidden holds d(layer output) on entry and
// d(layer input) on exit (none for the first layer when the embeddings are frozen).
void full_layer_backward(TrainableEncoder& m, EncoderActivations& a, size_t li, const int32_t* mask,
                         const DropoutRates& dr, bool embeddings_frozen) {
  const int64_t B = a.B, T = a.T, C = m.shape.hidden, I = m.shape.intermediate;
  const int64_t H = m.shape.heads, D = C / H, N = B * T;
  const float scale = 1.0f / std::sqrt(float(D));
  TrainableLayer& w = m.layers[li];
  LayerActivations& s = a.layers[li];
  core::Span layer_span(core::SpanKind::module, layer_module(m, li));
  // d_hidden: d(layer output) on entry, d(layer input) on exit.
  {
    core::Span span(core::SpanKind::module, "ffn");
    zero(a.d_scratch);
    {
      OpSpan o("layer_norm_backward", ops::layer_norm_cost(N, C, true));
      ops::layer_norm_backward_cpu(f(a.d_scratch), g(w.ln2_gamma), g(w.ln2_beta), f(a.d_hidden), f(s.residual2),
                                   f(w.ln2_gamma), f(s.mean2), f(s.rstd2), N, C);
    }
    // The residual carries d(residual2) to hidden1 unchanged; the FFN branch gets it through dropout.
    std::memcpy(f(a.d_hidden), f(a.d_scratch), a.d_scratch.nbytes());
    dropout_bwd(f(a.d_scratch), N * C, dr.hidden, key(dr, site_ffn(int64_t(li))));
    zero(a.d_ffn);
    {
      step::linear_backward(f(a.d_ffn), g(w.ffn_out_weight), g(w.ffn_out_bias), f(a.d_scratch), f(s.ffn_act),
                            wt(w.ffn_out_weight), N, C, I);
    }
    lora_bwd(m, w.ffn_out_lora, f(a.d_ffn), f(a.d_scratch), C, f(s.ffn_act), N, a, dr);
    // d(pre-activation) goes into ffn_act's buffer, which the backward no longer needs.
    if (a.fused && m.config.hidden_act != "relu") {
      {
        OpSpan o("bias_gelu_backward", ops::gelu_backward_cost(N * I));
        ops::bias_gelu_backward_cpu(f(s.ffn_act), g(w.ffn_in_bias), f(s.ffn_pre), f(a.d_ffn), N, I);
      }
      step::linear_backward(f(a.d_hidden), g(w.ffn_in_weight), nullptr, f(s.ffn_act), f(s.hidden1), wt(w.ffn_in_weight),
                            N, I, C);
      lora_bwd(m, w.ffn_in_lora, f(a.d_hidden), f(s.ffn_act), I, f(s.hidden1), N, a, dr);
    } else {
      zero(s.ffn_act);
      if (m.config.hidden_act == "relu") {
        OpSpan o("relu_backward", ops::activation_backward_cost(N * I));
        ops::relu_backward_cpu(f(s.ffn_act), f(s.ffn_pre), f(a.d_ffn), N * I);
      } else {
        OpSpan o("gelu_backward", ops::gelu_backward_cost(N * I));
        ops::gelu_backward_cpu(f(s.ffn_act), f(s.ffn_pre), f(a.d_ffn), N * I);
      }
      step::linear_backward(f(a.d_hidden), g(w.ffn_in_weight), g(w.ffn_in_bias), f(s.ffn_act), f(s.hidden1),
                            wt(w.ffn_in_weight), N, I, C);
      lora_bwd(m, w.ffn_in_lora, f(a.d_hidden), f(s.ffn_act), I, f(s.hidden1), N, a, dr);
    }
  }
  core::Span span(core::SpanKind::module, "attention");
  zero(a.d_scratch);
  {
    OpSpan o("layer_norm_backward", ops::layer_norm_cost(N, C, true));
    ops::layer_norm_backward_cpu(f(a.d_scratch), g(w.ln1_gamma), g(w.ln1_beta), f(a.d_hidden), f(s.residual1),
                                 f(w.ln1_gamma), f(s.mean1), f(s.rstd1), N, C);
  }
  std::memcpy(f(a.d_hidden), f(a.d_scratch), a.d_scratch.nbytes());
  if (m.family().attention_output_dropout)
    dropout_bwd(f(a.d_scratch), N * C, dr.hidden, key(dr, site_attention_output(int64_t(li))));
  // d(context) goes into residual1's buffer, no longer needed.
  zero(s.residual1);
  {
    step::linear_backward(f(s.residual1), g(w.out_weight), g(w.out_bias), f(a.d_scratch), f(s.context),
                          wt(w.out_weight), N, C, C);
  }
  lora_bwd(m, w.out_lora, f(s.residual1), f(a.d_scratch), C, f(s.context), N, a, dr);
  {
    OpSpan o("attention_backward", ops::attention_backward_cost(B, T, H, D));
    ops::attention_backward_cpu(f(a.d_qkv), f(a.d_qkv) + C, f(a.d_qkv) + 2 * C, f(s.residual1),
                                a.fused ? nullptr : f(s.probs), f(s.qkv), f(s.qkv) + C, f(s.qkv) + 2 * C, mask, B, T, H,
                                D, 3 * C, C, scale, dr.attention, key(dr, site_attention_probs(int64_t(li))), -1,
                                score_bias(m, a), relative_bias_parts(m, a));
  }
  if (relative_bias_parts(m, a)) add_relative_bias_grad(m, a);
  // The first layer's dX feeds only the embeddings: when they are frozen (LoRA), skip it.
  float* dx = li == 0 && embeddings_frozen ? nullptr : f(a.d_hidden);
  step::linear_backward(dx, g(w.qkv_weight), g(w.qkv_bias), f(a.d_qkv), f(s.input), wt(w.qkv_weight), N, 3 * C, C);
  lora_bwd(m, w.qkv_lora, dx, f(a.d_qkv), 3 * C, f(s.input), N, a, dr);
  if (a.layer_grads_ready) a.layer_grads_ready(int(li));
}

// The sequence classifier's backward, from d_logits [B, L] to d(first tokens) [B, C] in a.d_head.
void sequence_head_backward(TrainableEncoder& m, EncoderActivations& a, const float* d_logits, const DropoutRates& dr) {
  const int64_t B = a.B, C = m.shape.hidden, L = m.num_labels();
  {
    core::Span head_span(core::SpanKind::module, "classifier");
    zero(a.d_head);
    {
      step::linear_backward(f(a.d_head), g(m.classifier_weight), g(m.classifier_bias), d_logits, f(a.head_dropped),
                            f(m.classifier_weight), B, L, C);
    }
    dropout_bwd(f(a.d_head), B * C, dr.classifier, key(dr, site_head(m.shape.layers)));
    // Through the activation, from its saved output: d_first holds d(dense output).
    zero(a.d_first);
    if (m.family().head_activation == model::HeadActivation::tanh)
      ops::tanh_backward_cpu(f(a.d_first), f(a.head_hidden), f(a.d_head), B * C);
    else ops::relu_backward_cpu(f(a.d_first), f(a.head_hidden), f(a.d_head), B * C);
    zero(a.d_head);
    const Tensor& head_in = m.family().dropout_before_head_dense ? a.first_dropped : a.first;
    step::linear_backward(f(a.d_head), g(m.head_dense_weight), g(m.head_dense_bias), f(a.d_first), f(head_in),
                          wt(m.head_dense_weight), B, C, C);
    lora_bwd(m, m.head_dense_lora, f(a.d_head), f(a.d_first), C, f(head_in), B, a, dr);
    if (m.family().dropout_before_head_dense)
      dropout_bwd(f(a.d_head), B * C, dr.classifier, key(dr, site_head_input(m.shape.layers)));
  }
}

}  // namespace

// What the head's dense layer reads: a.first, or (RoBERTa) a.first after its own dropout.
const Tensor& head_input(const TrainableEncoder& m, EncoderActivations& a, const DropoutRates& dr) {
  if (!m.family().dropout_before_head_dense) return a.first;
  std::memcpy(f(a.first_dropped), f(a.first), a.first.nbytes());
  dropout_fwd(f(a.first_dropped), a.first.numel(), dr.classifier, key(dr, site_head_input(int64_t(m.layers.size()))));
  return a.first_dropped;
}

void trainable_forward(const TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch,
                       const DropoutRates& dr) {
  model::check_batch(batch, m.shape);
  const int64_t B = batch.batch(), T = batch.seq_len(), C = m.shape.hidden;
  const int64_t N = B * T, L = m.num_labels();
  const float eps = m.shape.eps;
  prepare_activations(a, m, B, T);
  const int32_t* ids = batch.input_ids.data<int32_t>();
  const int32_t* mask = batch.attention_mask.data<int32_t>();

  std::optional<core::Span> model_span(std::in_place, core::SpanKind::module, m.family().module);
  {
    core::Span span(core::SpanKind::module, "embeddings");
    {
      OpSpan s("embedding", ops::embedding_cost(N, C, DType::f32));
      ops::embedding_forward_cpu(f(a.emb_sum), ids, f(m.word), DType::f32, N, C, false);
      const Tensor pos = model::encoder_position_ids(batch.input_ids, m.shape);
      ops::embedding_forward_cpu(f(a.emb_sum), pos.data<int32_t>(), f(m.position), DType::f32, N, C, true);
      if (m.token_type) {
        std::vector<int32_t> zeros;
        const int32_t* types = batch.token_type_ids.defined() ? batch.token_type_ids.data<int32_t>()
                                                              : (zeros.assign(size_t(N), 0), zeros.data());
        ops::embedding_forward_cpu(f(a.emb_sum), types, f(m.token_type), DType::f32, N, C, true);
      }
    }
    OpSpan s("layer_norm", ops::layer_norm_cost(N, C, false));
    ops::layer_norm_forward_cpu(f(a.layers[0].input), f(a.emb_sum), nullptr, f(m.emb_ln_gamma), f(m.emb_ln_beta), N, C,
                                eps, f(a.emb_mean), f(a.emb_rstd));
  }
  dropout_fwd(f(a.layers[0].input), N * C, dr.hidden, key(dr, site_embeddings()));

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
  step::linear_forward(f(a.head_hidden), f(head_in), wt(m.head_dense_weight), f(m.head_dense_bias), B, C, C);
  lora_fwd(m, m.head_dense_lora, f(a.head_hidden), C, f(head_in), B, a, dr);
  if (m.family().head_activation == model::HeadActivation::tanh)
    ops::tanh_forward_cpu(f(a.head_hidden), f(a.head_hidden), B * C);
  else ops::relu_forward_cpu(f(a.head_hidden), f(a.head_hidden), B * C);
  std::memcpy(f(a.head_dropped), f(a.head_hidden), a.head_hidden.nbytes());
  dropout_fwd(f(a.head_dropped), B * C, dr.classifier, key(dr, site_head(m.shape.layers)));
  OpSpan o("linear", ops::linear_cost(B, L, C, DType::f32, true));
  ops::linear_forward_cpu(f(a.logits), f(a.head_dropped), f(m.classifier_weight), f(m.classifier_bias), B, L, C);
}

void trainable_backward(TrainableEncoder& m, EncoderActivations& a, const TokenBatch& batch, const float* d_logits,
                        const DropoutRates& dr) {
  const int64_t B = a.B, T = a.T, C = m.shape.hidden, I = m.shape.intermediate;
  const int64_t H = m.shape.heads, D = C / H, N = B * T, L = m.num_labels();
  const float scale = 1.0f / std::sqrt(float(D));
  const int32_t* ids = batch.input_ids.data<int32_t>();
  const int32_t* mask = batch.attention_mask.data<int32_t>();
  // The caller's "backward" scope (train_step.cc) prefixes these module paths.
  const bool embeddings_frozen =
      !g(m.word) && !g(m.position) && !(m.token_type && g(m.token_type)) && !g(m.emb_ln_gamma) && !g(m.emb_ln_beta);
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
    last_layer_backward(m, a, last, mask, dr, f(a.d_head));
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
  dropout_bwd(f(a.d_hidden), N * C, dr.hidden, key(dr, site_embeddings()));
  zero(a.d_scratch);
  {
    OpSpan o("layer_norm_backward", ops::layer_norm_cost(N, C, false));
    ops::layer_norm_backward_cpu(f(a.d_scratch), g(m.emb_ln_gamma), g(m.emb_ln_beta), f(a.d_hidden), f(a.emb_sum),
                                 f(m.emb_ln_gamma), f(a.emb_mean), f(a.emb_rstd), N, C);
  }
  OpSpan o("embedding_backward", ops::embedding_backward_cost(N, C));
  ops::embedding_backward_cpu(g(m.word), ids, f(a.d_scratch), N, C, int32_t(m.config.pad_token_id));
  const Tensor pos = model::encoder_position_ids(batch.input_ids, m.shape);
  // RoBERTa's nn.Embedding(padding_idx=pad) leaves the pad position's row without a gradient.
  ops::embedding_backward_cpu(g(m.position), pos.data<int32_t>(), f(a.d_scratch), N, C, m.shape.position_pad);
  if (m.token_type) {
    std::vector<int32_t> zeros;
    const int32_t* types = batch.token_type_ids.defined() ? batch.token_type_ids.data<int32_t>()
                                                          : (zeros.assign(size_t(N), 0), zeros.data());
    ops::embedding_backward_cpu(g(m.token_type), types, f(a.d_scratch), N, C, -1);
  }
}

}  // namespace tach::train
