// DistilBERT: word + position embeddings (no token types), post-LN layers with q/k/v/out_lin,
// and for classification pre_classifier + ReLU on [CLS], then the classifier.
#include "model/encoder_build.h"
#include "model/encoder_model.h"
#include "model/family.h"

namespace tach::model {

BuiltEncoder build_distilbert(const EncoderConfig& c, WeightBinder& w, const ops::LinearPlacement& place, bool with_head) {
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  BuiltEncoder m;
  m.shape = encoder_shape(c);
  EncoderWeights& e = m.weights;
  e.word_embeddings = on_device(w.take("embeddings.word_embeddings.weight", {c.vocab_size, C}), place.device);
  e.position_embeddings = on_device(w.take("embeddings.position_embeddings.weight", {c.max_position_embeddings, C}), place.device);
  take_layer_norm(w, "embeddings.LayerNorm", C, &e.emb_ln_gamma, &e.emb_ln_beta, place.device);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "transformer.layer." + std::to_string(i) + ".";
    EncoderLayer L;
    Tensor wq = w.take(p + "attention.q_lin.weight", {C, C});
    Tensor bq = w.take(p + "attention.q_lin.bias", {C});
    Tensor wk = w.take(p + "attention.k_lin.weight", {C, C});
    Tensor bk = w.take(p + "attention.k_lin.bias", {C});
    Tensor wv = w.take(p + "attention.v_lin.weight", {C, C});
    Tensor bv = w.take(p + "attention.v_lin.bias", {C});
    L.qkv = pack_linear(concat_rows(wq, wk, wv), concat_rows(bq, bk, bv), place);
    L.attn_out = take_linear(w, p + "attention.out_lin", C, C, place);
    take_layer_norm(w, p + "sa_layer_norm", C, &L.ln1_gamma, &L.ln1_beta, place.device);
    L.ffn_in = take_linear(w, p + "ffn.lin1", I, C, place, ffn_activation(c));
    L.ffn_out = take_linear(w, p + "ffn.lin2", C, I, place);
    take_layer_norm(w, p + "output_layer_norm", C, &L.ln2_gamma, &L.ln2_beta, place.device);
    e.layers.push_back(std::move(L));
  }
  if (with_head) {
    m.head.dense =
        take_linear(w, "pre_classifier", C, C, place, cpu::FusedActivation::relu, Scope::head);
    m.head.out = take_linear(w, "classifier", c.num_labels(), C, place, cpu::FusedActivation::none, Scope::head);
  }
  return m;
}

ModelFamily distilbert_family() {
  ModelFamily f;
  f.name = "DistilBERT encoders";
  f.model_types = {"distilbert"};
  f.body_prefix = "distilbert.";
  f.probe = "embeddings.word_embeddings.weight";
  f.classifier_weight = "classifier.weight";
  f.head_modules = {"pre_classifier", "classifier"};
  f.bare_architecture = "DistilBertModel";
  f.classifier_architecture = "DistilBertForSequenceClassification";
  f.lora_targets = {"q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"};
  f.tokenizer_hint = "bert-base-uncased";
  f.encoder = [] { return EncoderFamily::distilbert; };
  f.load = load_encoder;
  f.summarize = summarize_encoder;
  return f;
}

}  // namespace tach::model
