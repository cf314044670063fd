// BERT (bert-base-uncased and its fine-tunes): word + position + token-type embeddings,
// post-LN layers, and for classification the pooler (tanh dense on [CLS]) and a classifier.
#include "model/encoder_build.h"

namespace tach::model {

BuiltEncoder build_bert(const EncoderConfig& c, WeightBinder& w, DType compute, bool with_head) {
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  BuiltEncoder m;
  m.shape = encoder_shape(c);
  EncoderWeights& e = m.weights;
  e.word_embeddings = w.take("embeddings.word_embeddings.weight", {c.vocab_size, C});
  e.position_embeddings = w.take("embeddings.position_embeddings.weight", {c.max_position_embeddings, C});
  e.token_type_embeddings = w.take("embeddings.token_type_embeddings.weight", {c.type_vocab_size, C});
  e.emb_ln_gamma = to_f32_param(w.take("embeddings.LayerNorm.weight", {C}));
  e.emb_ln_beta = to_f32_param(w.take("embeddings.LayerNorm.bias", {C}));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    EncoderLayer L;
    Tensor wq = w.take(p + "attention.self.query.weight", {C, C});
    Tensor bq = w.take(p + "attention.self.query.bias", {C});
    Tensor wk = w.take(p + "attention.self.key.weight", {C, C});
    Tensor bk = w.take(p + "attention.self.key.bias", {C});
    Tensor wv = w.take(p + "attention.self.value.weight", {C, C});
    Tensor bv = w.take(p + "attention.self.value.bias", {C});
    L.qkv = pack_linear(concat_rows(wq, wk, wv), concat_rows(bq, bk, bv), compute);
    L.attn_out = pack_linear(w.take(p + "attention.output.dense.weight", {C, C}),
                             w.take(p + "attention.output.dense.bias", {C}), compute);
    L.ln1_gamma = to_f32_param(w.take(p + "attention.output.LayerNorm.weight", {C}));
    L.ln1_beta = to_f32_param(w.take(p + "attention.output.LayerNorm.bias", {C}));
    L.ffn_in = pack_linear(w.take(p + "intermediate.dense.weight", {I, C}), w.take(p + "intermediate.dense.bias", {I}),
                           compute, ffn_activation(c));
    L.ffn_out = pack_linear(w.take(p + "output.dense.weight", {C, I}), w.take(p + "output.dense.bias", {C}), compute);
    L.ln2_gamma = to_f32_param(w.take(p + "output.LayerNorm.weight", {C}));
    L.ln2_beta = to_f32_param(w.take(p + "output.LayerNorm.bias", {C}));
    e.layers.push_back(std::move(L));
  }
  if (with_head) {
    m.head.dense = pack_linear(w.take("pooler.dense.weight", {C, C}), w.take("pooler.dense.bias", {C}), compute,
                               cpu::FusedActivation::tanh);
    m.head.out = pack_linear(w.take_head("classifier.weight", {c.num_labels(), C}),
                             w.take_head("classifier.bias", {c.num_labels()}), compute);
  }
  return m;
}

}  // namespace tach::model
