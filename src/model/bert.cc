// BERT (bert-base-uncased and its fine-tunes): word + position + token-type embeddings,
// post-LN layers, and for classification the pooler (tanh dense on [CLS]) and a classifier.
#include "model/bert.h"

#include "model/config.h"
#include "model/config_fields.h"
#include "model/encoder_model.h"
#include "model/family.h"

namespace tach::model {

void read_bert_config(const Field& f, EncoderConfig& c) {
  c.vocab_size = f.positive_int("vocab_size", 0, true);
  c.hidden_size = f.positive_int("hidden_size", 768, false);
  c.num_layers = f.positive_int("num_hidden_layers", 12, false);
  c.num_heads = f.positive_int("num_attention_heads", 12, false);
  c.intermediate_size = f.positive_int("intermediate_size", 3072, false);
  c.max_position_embeddings = f.positive_int("max_position_embeddings", 512, false);
  c.type_vocab_size = f.positive_int("type_vocab_size", 2, false);
  c.layer_norm_eps = f.number("layer_norm_eps", 1e-12f);
  c.hidden_act = f.str("hidden_act", "gelu");
  c.hidden_dropout = f.probability("hidden_dropout_prob", 0.1f);
  c.attention_dropout = f.probability("attention_probs_dropout_prob", 0.1f);
  // …ForSequenceClassification: classifier_dropout, or hidden_dropout_prob when it is null.
  c.classifier_dropout = f.probability("classifier_dropout", c.hidden_dropout);
  const std::string pos = f.str("position_embedding_type", "absolute");
  if (pos != "absolute") f.fail("position_embedding_type", "is \"" + pos + "\"; only \"absolute\" is supported");
}

namespace {
const EncoderFamily kBert{.module = "bert", .names = {}, .read_config = read_bert_config};
}  // namespace

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
  f.token_classifier_architecture = "BertForTokenClassification";
  f.question_answering_architecture = "BertForQuestionAnswering";
  f.masked_lm_architecture = "BertForMaskedLM";
  f.lora_targets = {"query", "key", "value", "dense"};
  f.tokenizer_hint = "bert-base-uncased";
  f.pruning = {.pruned_heads = true, .ffn_key = "intermediate_size", .layers_key = "num_hidden_layers"};
  f.encoder = &kBert;
  f.load = load_encoder;
  f.summarize = summarize_encoder;
  return f;
}

}  // namespace tach::model
