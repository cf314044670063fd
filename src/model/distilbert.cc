// DistilBERT: word + position embeddings (no token types), post-LN layers with q/k/v/out_lin,
// and for classification pre_classifier + ReLU on [CLS], then the classifier.
#include "model/config.h"
#include "model/config_fields.h"
#include "model/encoder_model.h"
#include "model/family.h"

namespace tach::model {

namespace {

void read_distilbert_config(const Field& f, EncoderConfig& c) {
  c.vocab_size = f.positive_int("vocab_size", 0, true);
  c.hidden_size = f.positive_int("dim", 768, false);
  c.num_layers = f.positive_int("n_layers", 6, false);
  c.num_heads = f.positive_int("n_heads", 12, false);
  c.intermediate_size = f.positive_int("hidden_dim", 3072, false);
  c.max_position_embeddings = f.positive_int("max_position_embeddings", 512, false);
  c.type_vocab_size = 0;
  c.layer_norm_eps = 1e-12f;  // DistilBERT hard-codes its LayerNorm eps
  c.hidden_act = f.str("activation", "gelu");
  c.hidden_dropout = f.probability("dropout", 0.1f);
  c.attention_dropout = f.probability("attention_dropout", 0.1f);
  c.classifier_dropout = f.probability("seq_classif_dropout", 0.2f);
}

EncoderTensorNames distilbert_names() {
  EncoderTensorNames n;
  n.layer = "transformer.layer.";
  n.q = "attention.q_lin", n.k = "attention.k_lin", n.v = "attention.v_lin", n.out = "attention.out_lin";
  n.ln1 = "sa_layer_norm", n.ffn_in = "ffn.lin1", n.ffn_out = "ffn.lin2", n.ln2 = "output_layer_norm";
  n.head_dense = "pre_classifier", n.head_out = "classifier", n.head_dense_in_body = false;
  return n;
}

const EncoderFamily kDistilbert{.module = "distilbert",
                                .names = distilbert_names(),
                                .token_types = false,
                                .head_activation = HeadActivation::relu,
                                .attention_output_dropout = false,
                                .token_head_hidden_dropout = true,
                                .qa_dropout_key = "qa_dropout",
                                .read_config = read_distilbert_config};

}  // namespace

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
  f.token_classifier_architecture = "DistilBertForTokenClassification";
  f.question_answering_architecture = "DistilBertForQuestionAnswering";
  f.masked_lm_architecture = "DistilBertForMaskedLM";
  f.head_names.mlm_dense = "vocab_transform", f.head_names.mlm_norm = "vocab_layer_norm";
  f.head_names.mlm_decoder = "vocab_projector", f.head_names.mlm_bias = "";
  f.lora_targets = {"q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"};
  f.tokenizer_hint = "bert-base-uncased";
  f.pruning = {.pruned_heads = true, .ffn_key = "hidden_dim", .layers_key = "n_layers"};
  f.encoder = &kDistilbert;
  f.load = load_encoder;
  f.summarize = summarize_encoder;
  return f;
}

}  // namespace tach::model
