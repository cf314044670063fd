// One description of every pre-norm decoder tach builds (Qwen2, Llama, Mistral, Qwen3, Gemma 3),
// and of ModernBERT, the bidirectional encoder built from the same layer: the sizes, and the
// switches in which the families differ. config.json is read into it by
// parse_decoder_config, which takes the family's own fields from its row (model/family.h); the
// inference forward (model/decoder.cc), the training step (train/trainable_decoder_step.cc) and
// the estimate read only this.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "tach/model.h"

namespace tach::model {

struct DecoderConfig {
  std::string model_type;            // as config.json says
  std::string architecture;          // the first of "architectures", or the family's bare model
  bool classification_head = false;  // …ForSequenceClassification: `score`, pooled at the last non-pad token
  bool causal_lm = false;            // …ForCausalLM: `lm_head`, or the tied embeddings
  // The head config.json's architecture names (ModernBERT's *ForMaskedLM is Head::masked_lm), and
  // the head to build (the loader's choice; classification_head when sequence_classification).
  Head checkpoint_head = Head::none;
  Head head = Head::none;
  bool mlm_tied = true;      // ModernBERT's masked-LM decoder is the embeddings (tie_word_embeddings)
  bool decoder_bias = true;  // and has a bias (decoder_bias)

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // grouped-query attention: heads share key/value heads in groups
  int64_t head_dim = 0;      // may differ from hidden / heads (Qwen3, Gemma 3)
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  float norm_eps = 1e-6f;  // rms_norm_eps (ModernBERT: norm_eps, for its LayerNorms)

  // The switches.
  bool qkv_bias = false;        // q, k, v projections have biases (Qwen2; Llama's attention_bias)
  bool o_bias = false;          // the output projection too (Llama's attention_bias)
  bool mlp_bias = false;        // gate, up and down (Llama's mlp_bias)
  bool qk_norm = false;         // RMSNorm over each head of q and k before RoPE (Qwen3, Gemma 3)
  bool norm_plus_one = false;   // Gemma: every RMSNorm multiplies by (1 + weight)
  bool sandwich_norms = false;  // Gemma 2/3: norms on the attention and MLP outputs too
  ops::GateActivation activation = ops::GateActivation::silu;  // SwiGLU, or GeGLU (gelu_pytorch_tanh)
  bool scale_embeddings = false;     // Gemma: embeddings times sqrt(hidden), rounded to the table's dtype
  double query_pre_attn_scalar = 0;  // Gemma: scores scaled by its -1/2 power instead of head_dim's
  double final_logit_softcap = 0;    // LM logits = cap * tanh(logits / cap) (0: none)
  ops::RopeSettings rope;            // global (full-attention) layers
  ops::RopeSettings local_rope;      // sliding layers where the family gives them their own (Gemma 3)
  bool has_local_rope = false;
  std::vector<int64_t> layer_window;  // per layer: its sliding window, 0 = full attention
  bool tie_word_embeddings = false;

  // ModernBERT: a bidirectional stack of the same pre-norm layers.
  bool causal = true;           // false: a token sees the keys on both sides (within its layer's window)
  bool layer_norm = false;      // LayerNorms (without bias) in place of the RMSNorms
  bool first_attn_norm = true;  // false: layer 0's attention norm is the identity
  bool embedding_norm = false;  // a norm on the token embeddings (embeddings.norm)
  enum class Pooling { last_token, cls, mean };
  Pooling pooling = Pooling::last_token;  // what the classifier reads: the last non-pad token, the first, the mean
  bool head_mlp = false;  // head.dense (+ bias: head_dense_bias) -> GELU -> head.norm before the classifier
  bool head_dense_bias = false;
  bool classifier_bias = false;  // the classifier (score) has a bias

  float attention_dropout = 0;      // training: refused when not 0
  std::string other_dropout;        // training: refused when set ("mlp_dropout 0.1": ModernBERT's other dropouts)
  float initializer_range = 0.02f;  // std of a newly initialised head's weights (training)
  int64_t pad_token_id = -1;        // -1: none
  std::vector<int64_t> eos_token_ids;

  std::vector<std::string> id2label;
  std::map<std::string, int> label2id;
  std::string problem_type;
  std::string torch_dtype;

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  int64_t qkv_width() const { return (num_heads + 2 * num_kv_heads) * head_dim; }
  float attention_scale() const;  // what q·k is multiplied by
  bool any_sliding() const;
  // The RoPE a layer uses.
  const ops::RopeSettings& layer_rope(int64_t layer) const;
  // One line for tach info: "rotary (theta 10000), sliding window 4096 on 20 of 24 layers, ...".
  std::string describe_positions() const;
};

// config.json of any decoder family tach builds; errors name the file, the field and, for a
// feature tach does not implement, the feature.
DecoderConfig parse_decoder_config(const nlohmann::json& j, const std::string& source);
DecoderConfig parse_decoder_config_text(const std::string& text, const std::string& source);
DecoderConfig load_decoder_config(const std::string& path);

}  // namespace tach::model
