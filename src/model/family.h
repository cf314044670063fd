// The model families tach builds, one row each, and the only place in the code that compares a
// model_type. A row gives how config.json becomes one architecture description (the encoder's
// EncoderConfig, or for a decoder the sizes and switches of DecoderConfig through the family's
// read_switches), the Hugging Face tensor names and prefixes that loading, training, LoRA, merging
// and saving all use, the heads, the default LoRA targets and modules_to_save, the builders, and
// the numbers tach estimate needs. Adding a family is a row in a naming file (family_*.cc),
// presets, fixtures and tests (docs/architecture.md, "Adding a family").
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/checkpoint.h"
#include "tach/model.h"

namespace tach::model {

struct Field;  // model/config_fields.h
struct DecoderConfig;
struct EncoderConfig;

// The numbers the memory formulas need, whatever the family.
struct ArchitectureSummary {
  std::string name;  // the architecture as config.json names it (or the model_type)
  bool decoder = false, tied = false;
  int64_t V = 0, C = 0, L = 0, H = 0, KVH = 0, D = 0, I = 0;
  int64_t P = 0;  // learned positions (0 for rotary)
  // The longest row the model takes, as the loader checks it: RoBERTa's and MPNet's position ids
  // start after padding_idx, so P - padding_idx - 1 tokens; 0: P.
  int64_t max_row_tokens = 0;
  int64_t Tt = 0;             // token types
  int64_t relative_bias = 0;  // MPNet's relative position bias table: buckets x heads
  int64_t labels = 0;         // classifier outputs (0: no head)
  // The head built and what its count needs (encoders and ModernBERT; a causal decoder's score is
  // `labels` above): a bare encoder's pooler (BERT, RoBERTa, MPNet models as published without a
  // head; DistilBERT has none), ModernBERT's head.dense and head.norm before every head
  // (prediction_head), head.dense's bias and the masked-LM decoder's (an encoder's untied decoder:
  // its own bias besides the head's, as transformers 5 keeps both).
  Head head = Head::none;
  bool bare_pooler = false, prediction_head = false, head_dense_bias = false, decoder_bias = false;
  int64_t head_parameters() const;
  // Decoders: which projections have biases, and the per-layer norm vectors besides the two
  // every layer has (Gemma's sandwich norms: 2 more; q/k norms: 2 of head_dim).
  bool qkv_bias = false, o_bias = false, mlp_bias = false, qk_norm = false, sandwich_norms = false;
  // Mixture of experts (Mixtral, Qwen-MoE, DeepSeek-V3): moe_layers of L have `experts` experts of
  // width expert_I (a router C x experts), experts_per_token of them active, and shared experts of
  // total width shared_I (Qwen2-MoE adds a 1-output gate to them); the other layers a dense MLP of I.
  int64_t experts = 0, experts_per_token = 0, expert_I = 0, shared_I = 0, moe_layers = 0;
  bool shared_expert_gate = false;
  // DeepSeek's multi-head latent attention: q through a rank-q_lora_rank bottleneck (0: a plain
  // q_proj), k and v from one compressed kv_lora_rank latent plus a shared rope key per token.
  bool mla = false;
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_dim = 0, qk_nope_dim = 0, v_head_dim = 0;
  // Parameters the formulas below do not hold: ModernBERT's embedding norm, less layer 0's absent
  // attention norm; less the heads a pruned encoder lacks (config.json's pruned_heads).
  int64_t other_params = 0;
  std::string note;                       // how the numbers were read, when not from a family tach builds
  int64_t attention_params() const;       // one layer's attention, with its norms
  int64_t mlp_params(bool sparse) const;  // one layer's MLP (dense, or the experts)
  int64_t layer_params() const;           // a dense layer: attention, MLP, the two norms
  int64_t parameters() const;
  // What one token reads in the MLP: the dense width, or the active experts' and shared ones'.
  int64_t active_I() const { return experts > 0 ? experts_per_token * expert_I + shared_I : I; }
  // K and V per token per layer in the cache: 2 KVH D, or MLA's latent and rope key.
  int64_t kv_cache_width() const { return mla ? kv_lora_rank + qk_rope_dim : 2 * KVH * D; }
};

// A decoder layer's Hugging Face tensor names by role, under "layers.N." (weights; biases swap
// ".weight" for ".bias"). Gemma's norms: attn_out_norm and mlp_out_norm are its
// post_attention_layernorm and post_feedforward_layernorm, and mlp_norm is pre_feedforward_layernorm.
struct DecoderTensorNames {
  std::string embed = "embed_tokens", final_norm = "norm";
  std::string q = "self_attn.q_proj", k = "self_attn.k_proj", v = "self_attn.v_proj", o = "self_attn.o_proj";
  std::string gate = "mlp.gate_proj", up = "mlp.up_proj", down = "mlp.down_proj";
  std::string attn_norm = "input_layernorm", mlp_norm = "post_attention_layernorm";
  std::string attn_out_norm, mlp_out_norm;  // empty: the family has none
  std::string q_norm = "self_attn.q_norm", k_norm = "self_attn.k_norm";
  // Stored fused (ModernBERT's attn.Wqkv [3C, C] and mlp.Wi [2I, C]); empty: q/k/v and gate/up apart.
  std::string qkv_fused, gate_up_fused;
  std::string embed_norm;             // ModernBERT's embeddings.norm; empty: none
  std::string head_dense, head_norm;  // ModernBERT's classifier head (head.dense, head.norm)
};

// What a decoder family adds to its row.
struct DecoderFamily {
  const char* causal_lm_architecture;   // "LlamaForCausalLM"
  double default_rope_theta = 10000.0;  // when config.json names none
  bool tied_by_default = false;         // tie_word_embeddings when config.json omits it
  DecoderTensorNames names;
  // The family's own fields: biases, q/k norms, Gemma's norm and scaling switches, its rule for
  // sliding layers when config.json has no layer_types. Refuses, by name, what tach does not build.
  void (*read_switches)(const Field& f, DecoderConfig& c);
  // RoPE bases in transformers 4's spelling: the global one, and the local layers' where they
  // have their own (ModernBERT: global_rope_theta, local_rope_theta).
  const char* rope_theta_key = "rope_theta";
  const char* local_rope_theta_key = "rope_local_base_freq";
};

// A post-LayerNorm encoder's Hugging Face tensor names by role (BERT's by default). Layer names
// sit under `layer` + N + "."; each linear has .weight and .bias, each LayerNorm .weight and .bias.
struct EncoderTensorNames {
  std::string layer = "encoder.layer.";
  std::string q = "attention.self.query", k = "attention.self.key", v = "attention.self.value";
  std::string out = "attention.output.dense", ln1 = "attention.output.LayerNorm";
  std::string ffn_in = "intermediate.dense", ffn_out = "output.dense", ln2 = "output.LayerNorm";
  // The classification head on the first token: out(act(dense(h[:, 0]))). head_dense sits in the
  // body (BERT's pooler.dense, under the body prefix) or at the top level (pre_classifier,
  // RoBERTa's classifier.dense).
  std::string head_dense = "pooler.dense", head_out = "classifier";
  bool head_dense_in_body = true;
  // MPNet's relative position bias, an embedding [buckets, heads] shared by every layer; empty: none.
  std::string relative_bias;
};

enum class HeadActivation { tanh, relu };

// The heads besides the sequence classifier, by their Hugging Face names at the top level
// (weights; biases swap ".weight" for ".bias"). BERT's by default.
struct HeadTensorNames {
  // Token classification: a linear [labels, C] + bias on every token's hidden state.
  std::string token_classifier = "classifier";
  // Question answering: a linear [2, C] + bias on every token: the start and end logits.
  std::string qa_outputs = "qa_outputs";
  // The masked LM: LayerNorm(act(mlm_dense(h))) then mlm_decoder [V, C] + mlm_bias [V]. The
  // decoder's weight is the word embeddings where the checkpoint ties them (config.json's
  // tie_word_embeddings, true by default) and is not stored then; mlm_bias empty: the decoder's
  // own .bias. ModernBERT's head.dense has a bias only with classifier_bias and head.norm none.
  std::string mlm_dense = "cls.predictions.transform.dense";
  std::string mlm_norm = "cls.predictions.transform.LayerNorm";
  std::string mlm_decoder = "cls.predictions.decoder";
  std::string mlm_bias = "cls.predictions.bias";
  // The dense's activation: config.json's hidden activation (BERT's hidden_act, DistilBERT's
  // activation), or exact GELU whatever it says (RoBERTa's, XLM-R's and MPNet's lm_head).
  bool mlm_activation_from_config = true;
};

// What a post-LN encoder family adds to its row.
struct EncoderFamily {
  const char* module;  // the body's module in traces and saved names: "bert", "distilbert", "roberta"
  EncoderTensorNames names;
  bool token_types = true;  // a token-type embedding table (DistilBERT has none)
  // RoBERTa's position ids: padding_idx + 1 + the count of non-pad tokens so far (pad tokens sit at
  // padding_idx), as transformers' create_position_ids_from_input_ids; else 0..T-1.
  bool positions_after_padding = false;
  HeadActivation head_activation = HeadActivation::tanh;
  bool attention_output_dropout = true;    // dropout on the attention output (BertSelfOutput); DistilBERT has none
  bool dropout_before_head_dense = false;  // RoBERTa's head drops the first token before its dense
  // The per-token heads' dropout in training: …ForTokenClassification drops every hidden state by
  // the classifier dropout, DistilBERT's by its hidden `dropout`; only DistilBERT's
  // …ForQuestionAnswering drops before qa_outputs, by config.json's qa_dropout_key (nullptr: none).
  bool token_head_hidden_dropout = false;
  const char* qa_dropout_key = nullptr;
  // config.json's sizes under the family's own names, its dropouts; refuses what tach does not build.
  void (*read_config)(const Field& f, EncoderConfig& c) = nullptr;
  // With names.relative_bias: the buckets and distance transformers' compute_position_bias uses
  // (MPNet fixes them in code: 32 buckets, 128 tokens, whatever the table's size).
  int64_t relative_buckets = 0, relative_max_distance = 0;
};

// How a family writes a smaller model of itself that transformers reads (tach prune), and reads
// one back. A part the row leaves unset is refused, naming the family and why.
struct PruningRule {
  // Attention heads: removed per layer and listed in config.json's pruned_heads, the spelling of
  // transformers 4's prune_heads (transformers 5 builds every layer with num_attention_heads).
  bool pruned_heads = false;
  const char* heads_refusal = "tach has no rule for writing it with fewer attention heads";
  // FFN neurons, the same count in every layer: config.json's width under this key; nullptr: none.
  const char* ffn_key = nullptr;
  // Whole layers, the rest renumbered from 0: config.json's layer count under this key; nullptr: none.
  const char* layers_key = nullptr;
  // Decoders: heads go as whole key/value groups (a key/value head and the query heads that share
  // it), the same count in every layer, as config.json has one num_attention_heads and
  // num_key_value_heads; head_dim is written, so the narrower attention reads as an ordinary config.
  bool kv_groups = false;
  // Set: layer 0 stays, for this reason (ModernBERT builds layer 0 without an attention norm).
  const char* first_layer_refusal = nullptr;
  // transformers reads config.json's layer_types (sliding or full attention per layer) for the
  // family: where removing layers would change a kept layer's kind under the family's rule,
  // layer_types is written; false: such a removal is refused.
  bool layer_types = false;
};

struct ModelFamily {
  const char* name;                      // "Llama decoders (Llama 2/3.x, SmolLM2, TinyLlama)"
  std::vector<std::string> model_types;  // config.json's model_type values it builds
  // Checkpoint names. Task models keep the body under body_prefix ("model.", "bert."); bare
  // models at the top level. `probe` is a body tensor every checkpoint has.
  std::string body_prefix, probe;
  // …ForQuestionAnswering's body prefix where it is not body_prefix: Llama's, Qwen2's and Qwen3's
  // keep transformers' older attribute ("transformer."); empty: body_prefix.
  std::string question_answering_body_prefix;
  std::string classifier_weight;          // "score.weight", "classifier.weight"
  std::vector<std::string> head_modules;  // the classifier's top-level modules: PEFT's modules_to_save
  std::vector<std::string> top_modules;   // other modules outside the body (ModernBERT's pooled head)
  std::string lm_head;                    // the LM head's module ("lm_head"), "" for encoders
  std::string bare_architecture;          // "LlamaModel", "BertModel"
  std::string classifier_architecture;    // "LlamaForSequenceClassification": what a head makes of a base model
  // The per-token heads' architectures ("BertForTokenClassification", "BertForQuestionAnswering",
  // "BertForMaskedLM"); "" where the family has none (a causal decoder's masked LM, Gemma 3's).
  std::string token_classifier_architecture, question_answering_architecture, masked_lm_architecture;
  HeadTensorNames head_names;             // their tensors (encoder families and ModernBERT)
  std::vector<std::string> lora_targets;  // default LoRA target_modules (PEFT's names: every linear)
  std::string tokenizer_hint;             // a tokenizer to suggest when a checkpoint has none
  // Pre-split words (token classification) get a space before each, as run_ner.py's
  // add_prefix_space does for its byte-level model types (RoBERTa among the rows here).
  bool words_take_prefix_space = false;
  PruningRule pruning;                     // what tach prune may remove (default: nothing)
  const DecoderFamily* decoder = nullptr;  // exactly one of decoder and encoder is set
  const EncoderFamily* encoder = nullptr;
  std::unique_ptr<Model> (*load)(const ModelFamily& family, const ModelLocation& location, const LoadOptions& options);
  ArchitectureSummary (*summarize)(const ModelFamily& family, const ModelLocation& location);
};

const std::vector<ModelFamily>& model_families();
// A row's architectures with the head each builds: the bare model (Head::none), the sequence
// classifier and the per-token heads the family has.
std::vector<std::pair<std::string, Head>> family_architectures(const ModelFamily& family);
// The architecture of `head` in the family ("BertForMaskedLM"); the bare one for Head::none.
std::string architecture_for_head(const ModelFamily& family, Head head);
// The prefixes a task model's body is saved under (body_prefix, and QA's where it differs).
std::vector<std::string> task_body_prefixes(const ModelFamily& family);
// The family that builds a model_type; throws naming the ones tach builds.
const ModelFamily& model_family(const std::string& model_type);
// A preset's or a checkpoint's model_type (config.json's), checked against the table.
std::string model_type_of(const ModelLocation& location);
const ModelFamily& family_of(const ModelLocation& location);
ArchitectureSummary summarize_architecture(const ModelLocation& location);
// Every model_type tach builds, for messages: "bert, distilbert, qwen2, llama, ...".
std::string known_model_types();

// The rows, one per naming file.
ModelFamily bert_family();
ModelFamily distilbert_family();
ModelFamily roberta_family();
ModelFamily xlm_roberta_family();
ModelFamily mpnet_family();
ModelFamily qwen2_family();
ModelFamily llama_family();
ModelFamily mistral_family();
ModelFamily qwen3_family();
ModelFamily gemma3_family();
ModelFamily modernbert_family();

}  // namespace tach::model
