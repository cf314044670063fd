// RoBERTa and XLM-RoBERTa: BERT's layers and names under "roberta.", one token type, position ids
// that start after padding_idx and skip pad tokens, and a head of its own: classifier.dense (tanh)
// and classifier.out_proj on <s>, with dropout before each.
#include "model/bert.h"
#include "model/config.h"
#include "model/config_fields.h"
#include "model/encoder_model.h"
#include "model/family.h"

namespace tach::model {

namespace {

void read_roberta_config(const Field& f, EncoderConfig& c) {
  read_bert_config(f, c);
  // The positions a row can use start after padding_idx (pad_token_id).
  const int64_t pad = c.pad_token_id = f.nonneg_int("pad_token_id", 1);
  if (pad + 1 >= c.max_position_embeddings)
    f.fail("pad_token_id", "is " + std::to_string(pad) +
                               ": RoBERTa's positions start after it, and max_position_embeddings is " +
                               std::to_string(c.max_position_embeddings));
}

EncoderTensorNames roberta_names() {
  EncoderTensorNames n;
  n.head_dense = "classifier.dense", n.head_out = "classifier.out_proj", n.head_dense_in_body = false;
  return n;
}

const EncoderFamily kRoberta{.module = "roberta",
                             .names = roberta_names(),
                             .positions_after_padding = true,
                             .dropout_before_head_dense = true,
                             .read_config = read_roberta_config};

// RoBERTa's, XLM-R's and MPNet's lm_head: dense, exact GELU, layer_norm, decoder + lm_head.bias.
HeadTensorNames lm_head_names() {
  HeadTensorNames n;
  n.mlm_dense = "lm_head.dense", n.mlm_norm = "lm_head.layer_norm";
  n.mlm_decoder = "lm_head.decoder", n.mlm_bias = "lm_head.bias";
  n.mlm_activation_from_config = false;
  return n;
}

ModelFamily roberta_row(const char* name, const char* model_type, const char* bare, const char* classifier,
                        const char* tokenizer) {
  ModelFamily f;
  f.name = name;
  f.model_types = {model_type};
  f.body_prefix = "roberta.";
  f.probe = "embeddings.word_embeddings.weight";
  f.classifier_weight = "classifier.out_proj.weight";
  f.head_modules = {"classifier"};
  f.bare_architecture = bare;
  f.classifier_architecture = classifier;
  const std::string stem = std::string(bare).substr(0, std::string(bare).size() - 5);  // "RobertaModel" -> "Roberta"
  f.token_classifier_architecture = stem + "ForTokenClassification";
  f.question_answering_architecture = stem + "ForQuestionAnswering";
  f.masked_lm_architecture = stem + "ForMaskedLM";
  f.head_names = lm_head_names();
  f.lora_targets = {"query", "key", "value", "dense"};
  f.tokenizer_hint = tokenizer;
  f.pruning = {.pruned_heads = true, .ffn_key = "intermediate_size", .layers_key = "num_hidden_layers"};
  f.encoder = &kRoberta;
  f.load = load_encoder;
  f.summarize = summarize_encoder;
  return f;
}

}  // namespace

ModelFamily roberta_family() {
  ModelFamily f =
      roberta_row("RoBERTa encoders", "roberta", "RobertaModel", "RobertaForSequenceClassification", "roberta-base");
  f.words_take_prefix_space = true;  // run_ner.py's list names roberta, not xlm-roberta
  return f;
}

ModelFamily xlm_roberta_family() {
  return roberta_row("XLM-RoBERTa encoders (multilingual-e5, bge-m3)", "xlm-roberta", "XLMRobertaModel",
                     "XLMRobertaForSequenceClassification", "xlm-roberta-base");
}

}  // namespace tach::model
