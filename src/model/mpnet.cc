// MPNet (all-mpnet-base-v2, microsoft/mpnet-base): BERT's post-LN layers under names of its own
// (attention.attn.q/k/v/o), no token types, RoBERTa's position ids after padding_idx, and a
// relative position bias: encoder.relative_attention_bias [buckets, heads], looked up by each
// query-key distance's bucket and added to every layer's scores. The classifier is RoBERTa's
// (classifier.dense, tanh, classifier.out_proj, dropout before each), with hidden_dropout_prob.
#include "model/bert.h"
#include "model/config.h"
#include "model/config_fields.h"
#include "model/encoder_model.h"
#include "model/family.h"

namespace tach::model {

namespace {

// transformers' MPNetEncoder.compute_position_bias buckets with these, whatever the config says.
constexpr int64_t kBuckets = 32, kMaxDistance = 128;

void read_mpnet_config(const Field& f, EncoderConfig& c) {
  read_bert_config(f, c);
  c.type_vocab_size = 0;
  c.classifier_dropout = c.hidden_dropout;  // MPNetClassificationHead drops with hidden_dropout_prob
  c.pad_token_id = f.nonneg_int("pad_token_id", 1);
  if (c.pad_token_id + 1 >= c.max_position_embeddings)
    f.fail("pad_token_id", "is " + std::to_string(c.pad_token_id) +
                               ": MPNet's positions start after it, and max_position_embeddings is " +
                               std::to_string(c.max_position_embeddings));
  c.relative_attention_buckets = f.positive_int("relative_attention_num_buckets", kBuckets, false);
  if (c.relative_attention_buckets < kBuckets)
    f.fail("relative_attention_num_buckets", "is " + std::to_string(c.relative_attention_buckets) +
                                                 ": transformers' MPNet looks up " + std::to_string(kBuckets) +
                                                 " buckets in this table, so it needs at least that many rows");
}

EncoderTensorNames mpnet_names() {
  EncoderTensorNames n;
  n.q = "attention.attn.q", n.k = "attention.attn.k", n.v = "attention.attn.v", n.out = "attention.attn.o";
  n.ln1 = "attention.LayerNorm";
  n.head_dense = "classifier.dense", n.head_out = "classifier.out_proj", n.head_dense_in_body = false;
  n.relative_bias = "encoder.relative_attention_bias";
  return n;
}

const EncoderFamily kMpnet{.module = "mpnet",
                           .names = mpnet_names(),
                           .token_types = false,
                           .positions_after_padding = true,
                           .dropout_before_head_dense = true,
                           .read_config = read_mpnet_config,
                           .relative_buckets = kBuckets,
                           .relative_max_distance = kMaxDistance};

}  // namespace

ModelFamily mpnet_family() {
  ModelFamily f;
  f.name = "MPNet encoders (all-mpnet-base-v2)";
  f.model_types = {"mpnet"};
  f.body_prefix = "mpnet.";
  f.probe = "embeddings.word_embeddings.weight";
  f.classifier_weight = "classifier.out_proj.weight";
  f.head_modules = {"classifier"};
  f.bare_architecture = "MPNetModel";
  f.classifier_architecture = "MPNetForSequenceClassification";
  f.token_classifier_architecture = "MPNetForTokenClassification";
  f.question_answering_architecture = "MPNetForQuestionAnswering";
  f.masked_lm_architecture = "MPNetForMaskedLM";
  f.head_names.mlm_dense = "lm_head.dense", f.head_names.mlm_norm = "lm_head.layer_norm";
  f.head_names.mlm_decoder = "lm_head.decoder", f.head_names.mlm_bias = "lm_head.bias";
  f.head_names.mlm_activation_from_config = false;  // MPNetLMHead: gelu
  f.lora_targets = {"q", "k", "v", "o", "dense"};
  f.tokenizer_hint = "all-mpnet-base-v2";
  // One relative position bias table serves every layer's heads, so no layer can have fewer.
  f.pruning = {.heads_refusal = "its relative position bias is one table for every layer's heads",
               .ffn_key = "intermediate_size",
               .layers_key = "num_hidden_layers"};
  f.encoder = &kMpnet;
  f.load = load_encoder;
  f.summarize = summarize_encoder;
  return f;
}

}  // namespace tach::model
