// DistilBERT: word + position embeddings (no token types), post-LN layers with q/k/v/out_lin,
// and for classification pre_classifier + ReLU on [CLS], then the classifier.
#include "model/encoder_build.h"

namespace tach::model {

BuiltEncoder build_distilbert(const EncoderConfig& c, WeightBinder& w, DType compute, bool with_head) {
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  BuiltEncoder m;
  m.shape = encoder_shape(c);
  EncoderWeights& e = m.weights;
  e.word_embeddings = w.take("embeddings.word_embeddings.weight", {c.vocab_size, C});
  e.position_embeddings = w.take("embeddings.position_embeddings.weight", {c.max_position_embeddings, C});
  e.emb_ln_gamma = to_f32_param(w.take("embeddings.LayerNorm.weight", {C}));
  e.emb_ln_beta = to_f32_param(w.take("embeddings.LayerNorm.bias", {C}));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "transformer.layer." + std::to_string(i) + ".";
    EncoderLayer L;
    Tensor wq = w.take(p + "attention.q_lin.weight", {C, C});
    Tensor bq = w.take(p + "attention.q_lin.bias", {C});
    Tensor wk = w.take(p + "attention.k_lin.weight", {C, C});
    Tensor bk = w.take(p + "attention.k_lin.bias", {C});
    Tensor wv = w.take(p + "attention.v_lin.weight", {C, C});
    Tensor bv = w.take(p + "attention.v_lin.bias", {C});
    L.qkv = pack_linear(concat_rows(wq, wk, wv), concat_rows(bq, bk, bv), compute);
    L.attn_out = pack_linear(w.take(p + "attention.out_lin.weight", {C, C}), w.take(p + "attention.out_lin.bias", {C}),
                             compute);
    L.ln1_gamma = to_f32_param(w.take(p + "sa_layer_norm.weight", {C}));
    L.ln1_beta = to_f32_param(w.take(p + "sa_layer_norm.bias", {C}));
    L.ffn_in = pack_linear(w.take(p + "ffn.lin1.weight", {I, C}), w.take(p + "ffn.lin1.bias", {I}), compute,
                           ffn_activation(c));
    L.ffn_out = pack_linear(w.take(p + "ffn.lin2.weight", {C, I}), w.take(p + "ffn.lin2.bias", {C}), compute);
    L.ln2_gamma = to_f32_param(w.take(p + "output_layer_norm.weight", {C}));
    L.ln2_beta = to_f32_param(w.take(p + "output_layer_norm.bias", {C}));
    e.layers.push_back(std::move(L));
  }
  if (with_head) {
    m.head.dense = pack_linear(w.take_head("pre_classifier.weight", {C, C}), w.take_head("pre_classifier.bias", {C}),
                               compute, cpu::FusedActivation::relu);
    m.head.out = pack_linear(w.take_head("classifier.weight", {c.num_labels(), C}),
                             w.take_head("classifier.bias", {c.num_labels()}), compute);
  }
  return m;
}

}  // namespace tach::model
