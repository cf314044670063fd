// BERT (bert-base-uncased and its fine-tunes): word + position + token-type embeddings,
// post-LN layers, and for classification the pooler (tanh dense on [CLS]) and a classifier.
#include "model/encoder_build.h"
#include "model/encoder_model.h"
#include "model/family.h"

namespace tach::model {

BuiltEncoder build_bert(const EncoderConfig& c, WeightBinder& w, const ops::LinearPlacement& place, bool with_head) {
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  BuiltEncoder m;
  m.shape = encoder_shape(c);
  EncoderWeights& e = m.weights;
  e.word_embeddings = on_device(w.take("embeddings.word_embeddings.weight", {c.vocab_size, C}), place.device);
  e.position_embeddings = on_device(w.take("embeddings.position_embeddings.weight", {c.max_position_embeddings, C}), place.device);
  e.token_type_embeddings = on_device(w.take("embeddings.token_type_embeddings.weight", {c.type_vocab_size, C}), place.device);
  take_layer_norm(w, "embeddings.LayerNorm", C, &e.emb_ln_gamma, &e.emb_ln_beta, place.device);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    EncoderLayer L;
    Tensor wq = w.take(p + "attention.self.query.weight", {C, C});
    Tensor bq = w.take(p + "attention.self.query.bias", {C});
    Tensor wk = w.take(p + "attention.self.key.weight", {C, C});
    Tensor bk = w.take(p + "attention.self.key.bias", {C});
    Tensor wv = w.take(p + "attention.self.value.weight", {C, C});
    Tensor bv = w.take(p + "attention.self.value.bias", {C});
    L.qkv = pack_linear(concat_rows(wq, wk, wv), concat_rows(bq, bk, bv), place);
    L.attn_out = take_linear(w, p + "attention.output.dense", C, C, place);
    take_layer_norm(w, p + "attention.output.LayerNorm", C, &L.ln1_gamma, &L.ln1_beta, place.device);
    L.ffn_in = take_linear(w, p + "intermediate.dense", I, C, place, ffn_activation(c));
    L.ffn_out = take_linear(w, p + "output.dense", C, I, place);
    take_layer_norm(w, p + "output.LayerNorm", C, &L.ln2_gamma, &L.ln2_beta, place.device);
    e.layers.push_back(std::move(L));
  }
  if (with_head) {
    m.head.dense = take_linear(w, "pooler.dense", C, C, place, cpu::FusedActivation::tanh);
    m.head.out = take_linear(w, "classifier", c.num_labels(), C, place, cpu::FusedActivation::none, Scope::head);
  }
  return m;
}

ModelFamily bert_family() {
  ModelFamily f;
  f.name = "BERT encoders";
  f.model_types = {"bert"};
  f.body_prefix = "bert.";
  f.probe = "embeddings.word_embeddings.weight";
  f.classifier_weight = "classifier.weight";
  f.head_modules = {"classifier"};
  f.bare_architecture = "BertModel";
  f.classifier_architecture = "BertForSequenceClassification";
  f.lora_targets = {"query", "key", "value", "dense"};
  f.tokenizer_hint = "bert-base-uncased";
  f.encoder = [] { return EncoderFamily::bert; };
  f.load = load_encoder;
  f.summarize = summarize_encoder;
  return f;
}

}  // namespace tach::model
