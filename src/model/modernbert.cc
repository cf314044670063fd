// ModernBERT (answerdotai/ModernBERT-base, gte-modernbert, modernbert-embed): a bidirectional
// stack of the pre-norm layers the decoders share. LayerNorms without bias; layer 0's attention
// norm is the identity and the embeddings have a norm of their own; q|k|v stored fused (Wqkv) and
// GeGLU with exact GELU from the fused Wi (its first half activated); rotary embeddings with a
// global base on every global_attn_every_n_layers-th layer and a local base on the others, which
// see local_attention / 2 keys on either side; a final norm. The classifier pools the first token
// or the mean over the mask, then head.dense -> GELU -> head.norm -> classifier (with a bias).
#include "model/config_fields.h"
#include "model/decoder_config.h"
#include "model/decoder_model.h"
#include "model/family.h"

namespace tach::model {

namespace {

void refuse_unless(const Field& f, const char* key, const std::string& want, const std::string& why) {
  const std::string got = f.str(key, want);
  if (got != want) f.fail(key, "is \"" + got + "\"; " + why);
}

void read_modernbert(const Field& f, DecoderConfig& c) {
  refuse_unless(f, "hidden_activation", "gelu", "ModernBERT in tach runs gelu (exact) in its GeGLU");
  refuse_unless(f, "classifier_activation", "gelu", "ModernBERT's head in tach runs gelu");
  c.activation = ops::GateActivation::gelu;
  c.norm_eps = f.number("norm_eps", 1e-5f);
  if (f.flag("norm_bias", false)) f.fail("norm_bias", "is true; tach builds ModernBERT's bias-free LayerNorms");
  c.qkv_bias = c.o_bias = f.flag("attention_bias", false);
  c.mlp_bias = f.flag("mlp_bias", false);
  c.causal = false;
  c.layer_norm = true;
  c.first_attn_norm = false;
  c.embedding_norm = true;
  c.has_local_rope = true;  // local layers: local_rope_theta (default 10000)
  // The masked-LM head (head + decoder, tied to the embeddings) is a per-token head (the
  // checkpoint's or --head's), not a causal LM's: it never generates.
  c.causal_lm = false;
  c.mlm_tied = c.tie_word_embeddings;
  c.decoder_bias = f.flag("decoder_bias", true);
  c.tie_word_embeddings = false;
  // Without layer_types: every n-th layer global (from layer 0), the others local, seeing
  // local_attention / 2 keys on either side (transformers' sliding_window).
  const int64_t local = f.positive_int("local_attention", 128, false);
  if (local < 2)
    f.fail("local_attention",
           "is " + std::to_string(local) +
               "; a local layer sees local_attention / 2 keys on either side, so it must be at least 2");
  const int64_t every = f.positive_int("global_attn_every_n_layers", 3, false);
  for (int64_t i = 0; i < c.num_layers; ++i) c.layer_window[size_t(i)] = i % every ? local / 2 : 0;
  // layer_types (transformers 5 saves it; a pruned model's may make local a layer the rule would
  // not) takes the window from local_attention too, even where the rule leaves no layer local.
  if (f.has("layer_types") && f.root["layer_types"].is_array() && int64_t(f.root["layer_types"].size()) == c.num_layers)
    for (int64_t i = 0; i < c.num_layers; ++i)
      if (f.root["layer_types"][size_t(i)] == "sliding_attention") c.layer_window[size_t(i)] = local / 2;
  const std::string pooling = f.str("classifier_pooling", "cls");
  if (pooling == "cls") c.pooling = DecoderConfig::Pooling::cls;
  else if (pooling == "mean") c.pooling = DecoderConfig::Pooling::mean;
  else f.fail("classifier_pooling", "is \"" + pooling + "\"; ModernBERT pools \"cls\" or \"mean\"");
  c.head_mlp = true;
  c.head_dense_bias = f.flag("classifier_bias", false);
  c.classifier_bias = true;
  for (const char* key : {"embedding_dropout", "mlp_dropout", "classifier_dropout"})
    if (const double p = f.nonneg_number(key, 0); p > 0 && c.other_dropout.empty())
      c.other_dropout = std::string(key) + " " + std::to_string(p);
}

DecoderTensorNames modernbert_names() {
  DecoderTensorNames n;
  n.embed = "embeddings.tok_embeddings", n.embed_norm = "embeddings.norm", n.final_norm = "final_norm";
  n.qkv_fused = "attn.Wqkv", n.o = "attn.Wo", n.gate_up_fused = "mlp.Wi", n.down = "mlp.Wo";
  n.attn_norm = "attn_norm", n.mlp_norm = "mlp_norm";
  n.q = n.k = n.v = n.gate = n.up = n.q_norm = n.k_norm = "";
  n.head_dense = "head.dense", n.head_norm = "head.norm";
  return n;
}

const DecoderFamily kModernBert{.causal_lm_architecture = "ModernBertForMaskedLM",
                                .default_rope_theta = 160000.0,
                                .tied_by_default = false,
                                .names = modernbert_names(),
                                .read_switches = read_modernbert,
                                .rope_theta_key = "global_rope_theta",
                                .local_rope_theta_key = "local_rope_theta"};

}  // namespace

ModelFamily modernbert_family() {
  ModelFamily f =
      decoder_family_row("ModernBERT encoders (gte-modernbert, modernbert-embed)", "modernbert", "ModernBertModel",
                         "ModernBertForSequenceClassification", &kModernBert, "answerdotai/ModernBERT-base");
  f.classifier_weight = "classifier.weight";
  f.head_modules = {"classifier"};  // PEFT's default modules_to_save; head.dense is a linear LoRA may target
  f.top_modules = {"head"};
  f.lm_head = "";
  f.token_classifier_architecture = "ModernBertForTokenClassification";
  f.question_answering_architecture = "ModernBertForQuestionAnswering";
  f.masked_lm_architecture = "ModernBertForMaskedLM";
  // Every head runs head.dense -> GELU -> head.norm first (names.head_dense, names.head_norm);
  // the per-token ones then a `classifier` (QA's too), the masked LM the tied `decoder`.
  f.head_names.token_classifier = "classifier", f.head_names.qa_outputs = "classifier";
  f.head_names.mlm_dense = "head.dense", f.head_names.mlm_norm = "head.norm";
  f.head_names.mlm_decoder = "decoder", f.head_names.mlm_bias = "";
  f.lora_targets = {"Wqkv", "Wo", "Wi", "dense"};
  f.pruning = {.heads_refusal =
                   "its config.json has no head_dim (transformers sizes a head as hidden_size / "
                   "num_attention_heads), so fewer heads would be wider ones",
               .ffn_key = "intermediate_size",
               .layers_key = "num_hidden_layers",
               .first_layer_refusal =
                   "transformers builds layer 0 without an attention norm, so the layer "
                   "renumbered 0 would lose its own",
               .layer_types = true};
  return f;
}

}  // namespace tach::model
