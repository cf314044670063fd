#include "model/encoder_heads.h"

#include <algorithm>
#include <sstream>

#include "core/trace.h"
#include "model/encoder_build.h"
#include "model/family.h"
#include "ops/layer_norm.h"
#include "tach/error.h"

namespace tach::model {

Tensor take_head_tensor(WeightBinder& w, HeadSource& s, const std::string& name, const Shape& shape, bool in_body,
                        HeadInit init) {
  if (!s.fresh || w.holds(name, shape, !in_body)) return in_body ? w.take(name, shape) : w.take_head(name, shape);
  Tensor t = Tensor::zeros(shape, DType::f32, Device::cpu(), MemoryCategory::weights);
  if (init == HeadInit::normal) fill_normal(t, s.std, s.seed, name);
  if (init == HeadInit::ones) std::fill_n(t.data<float>(), t.numel(), 1.0f);
  s.initialised.push_back(in_body ? s.body_prefix + name : name);
  s.initialised_parameters += t.numel();
  return t;
}

namespace {

std::unique_ptr<ops::Linear> linear(WeightBinder& w, HeadSource& s, const std::string& name, int64_t out, int64_t in,
                                    const ops::LinearPlacement& place, cpu::FusedActivation act, bool in_body) {
  Tensor weight = take_head_tensor(w, s, name + ".weight", {out, in}, in_body, HeadInit::normal);
  Tensor bias = take_head_tensor(w, s, name + ".bias", {out}, in_body, HeadInit::zeros);
  return pack_linear(weight, bias, place, act);
}

}  // namespace

EncoderHead build_encoder_head(const EncoderConfig& c, const ModelFamily& family, Head head, int64_t labels,
                               WeightBinder& w, HeadSource& s, const Tensor& word_embeddings,
                               const ops::LinearPlacement& place) {
  const EncoderTensorNames& n = c.family->names;
  const HeadTensorNames& hn = family.head_names;
  const int64_t C = c.hidden_size, V = c.vocab_size;
  EncoderHead h;
  h.head = head;
  switch (head) {
    case Head::none: break;
    case Head::sequence_classification: {
      const cpu::FusedActivation act =
          c.family->head_activation == HeadActivation::relu ? cpu::FusedActivation::relu : cpu::FusedActivation::tanh;
      h.classifier.dense = linear(w, s, n.head_dense, C, C, place, act, n.head_dense_in_body);
      h.classifier.out = linear(w, s, n.head_out, labels, C, place, cpu::FusedActivation::none, false);
      h.outputs = labels;
      break;
    }
    case Head::token_classification:
      h.per_token = linear(w, s, hn.token_classifier, labels, C, place, cpu::FusedActivation::none, false);
      h.outputs = labels;
      break;
    case Head::question_answering:
      h.per_token = linear(w, s, hn.qa_outputs, 2, C, place, cpu::FusedActivation::none, false);
      h.outputs = 2;
      break;
    case Head::masked_lm: {
      const cpu::FusedActivation act =
          hn.mlm_activation_from_config ? ffn_activation(c) : cpu::FusedActivation::gelu_erf;
      h.mlm.dense = linear(w, s, hn.mlm_dense, C, C, place, act, false);
      h.mlm.norm_gamma =
          to_f32_param(take_head_tensor(w, s, hn.mlm_norm + ".weight", {C}, false, HeadInit::ones), place.device);
      h.mlm.norm_beta =
          to_f32_param(take_head_tensor(w, s, hn.mlm_norm + ".bias", {C}, false, HeadInit::zeros), place.device);
      h.mlm.eps = c.layer_norm_eps;
      // Untied: the decoder's own weight. Tied: the word embeddings (a checkpoint may still hold a
      // copy of them under the decoder's name, which is left unread, as transformers ties over it).
      // The bias: the head's (BERT's cls.predictions.bias), which the decoder's is tied to. Untied
      // (transformers 5 ties neither then), the decoder runs its own bias and the head's is a
      // parameter of its own that nothing reads, counted as transformers counts it.
      const std::string decoder_bias = hn.mlm_decoder + ".bias";
      const bool own_bias = hn.mlm_bias.empty() || (!c.tie_word_embeddings && w.holds(decoder_bias, {V}, true));
      Tensor weight = c.tie_word_embeddings
                          ? word_embeddings
                          : take_head_tensor(w, s, hn.mlm_decoder + ".weight", {V, C}, false, HeadInit::normal);
      Tensor bias = take_head_tensor(w, s, own_bias ? decoder_bias : hn.mlm_bias, {V}, false, HeadInit::zeros);
      if (own_bias && !hn.mlm_bias.empty()) (void)take_head_tensor(w, s, hn.mlm_bias, {V}, false, HeadInit::zeros);
      h.mlm.decoder = pack_linear(weight, bias, place);
      h.outputs = V;
      break;
    }
  }
  return h;
}

Tensor per_token_head_forward(const EncoderHead& head, const Tensor& h) {
  check(head.per_token || head.mlm.decoder, "per_token_head_forward: the model has no per-token head");
  const int64_t N = h.size(0), C = h.size(1);
  const Device device = h.device();
  Tensor out = Tensor::empty({N, head.outputs}, DType::f32, device);
  if (head.per_token) {
    core::Span span(core::SpanKind::module, head.head == Head::question_answering ? "qa_outputs" : "classifier");
    ops::linear_forward(out, h, *head.per_token);
    return out;
  }
  core::Span span(core::SpanKind::module, "lm_head");
  Tensor t = Tensor::empty({N, C}, DType::f32, device);
  ops::linear_forward(t, h, *head.mlm.dense);
  ops::layer_norm_forward(t, t, Tensor(), head.mlm.norm_gamma, head.mlm.norm_beta, head.mlm.eps);
  ops::linear_forward(out, t, *head.mlm.decoder);
  return out;
}

ops::OpCost per_token_head_cost(const EncoderHead& head, int64_t N, int64_t C, DType compute) {
  ops::OpCost c;
  if (head.mlm.decoder) {
    c += ops::linear_cost(N, C, C, compute, true);
    c += ops::layer_norm_cost(N, C, false);
  }
  c += ops::linear_cost(N, head.outputs, C, compute, true);
  return c;
}

std::string new_head_note(const HeadSource& s, const std::string& architecture, const std::string& checkpoint) {
  if (s.initialised.empty()) return "";
  std::vector<std::string> names = s.initialised;
  std::sort(names.begin(), names.end());
  std::ostringstream std;
  std << s.std;
  std::string list;
  for (const auto& name : names) list += (list.empty() ? "'" : ", '") + name + "'";
  return "Some weights of " + architecture + " were not initialized from the model checkpoint at " + checkpoint +
         " and are newly initialized: [" + list + "] (weights N(0, " + std.str() + "), biases 0, seed " +
         std::to_string(s.seed) + "). You should probably TRAIN this model on a down-stream task to be able to use " +
         "it for predictions and inference.";
}

}  // namespace tach::model
