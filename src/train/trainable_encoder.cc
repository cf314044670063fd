// Binding a checkpoint into the parameter table, and sizing the saved activations.
#include "train/trainable_encoder.h"

#include <algorithm>
#include <cmath>

#include "model/encoder_build.h"
#include "ops/attention.h"
#include "ops/train_attention_kernel.h"
#include "tach/error.h"
#include "tach/plain_number.h"

namespace tach::train {

namespace {

// transformers' _init_weights for a new nn.Linear: weight N(0, std), bias 0. Drawn on the host
// (ParameterTable::add copies each initial value to the model's device, as a checkpoint's).
Tensor normal_init(const Shape& shape, float std, uint64_t seed, const std::string& name) {
  Tensor t = Tensor::empty(shape, DType::f32, Device::cpu(), MemoryCategory::workspace);
  model::fill_normal(t, std, seed, name);
  return t;
}

// The row's architecture for a head, or an error naming the family.
std::string head_architecture(const model::ModelFamily& row, Head task) {
  const std::string& a = task == Head::token_classification ? row.token_classifier_architecture
                         : task == Head::question_answering ? row.question_answering_architecture
                         : task == Head::masked_lm          ? row.masked_lm_architecture
                                                            : row.classifier_architecture;
  check(!a.empty(), std::string(row.name) + " has no " + head_name(task) + " head to train");
  return a;
}

}  // namespace

TrainableEncoder build_trainable_encoder(const model::EncoderConfig& config, const model::ModelFamily& row,
                                         model::WeightBinder& w, uint64_t init_seed, std::vector<std::string>* notes,
                                         Head task, const std::string& checkpoint, Device device) {
  check(task == Head::sequence_classification || task == Head::token_classification ||
            task == Head::question_answering || task == Head::masked_lm,
        std::string("training needs a head, not \"") + head_name(task) + "\"");
  check(task == Head::masked_lm || task == Head::question_answering || config.num_labels() >= 1,
        "training needs a classification head: the model has no labels");
  // Every layer is built with num_heads; a head-pruned checkpoint's smaller tensors would then fail
  // to bind like a corrupt file. Refused before any weight is read.
  bool heads_pruned = false;
  for (int64_t l = 0; l < config.num_layers; ++l) heads_pruned |= config.heads_in_layer(l) != config.num_heads;
  check(!heads_pruned, checkpoint +
                           " has pruned_heads (config.json); tach train does not build head-pruned models "
                           "yet; tach eval, bench and classify run it, and tach prune --ffn or --layers "
                           "(without --heads) makes a model tach train fine-tunes");
  TrainableEncoder m;
  m.device = device;
  m.params = ParameterTable(device);
  m.config = config;
  m.shape = model::encoder_shape(config);
  m.task = task;
  m.row = &row;
  m.head_architecture = head_architecture(row, task);
  if (task == Head::question_answering) m.config.id2label = {"start", "end"};
  if (task == Head::masked_lm) m.config.id2label.clear();
  const model::EncoderFamily& family = m.family();
  const model::EncoderTensorNames& n = family.names;
  const model::HeadTensorNames& hn = row.head_names;
  const int64_t C = config.hidden_size, I = config.intermediate_size, L = m.config.num_labels();
  // Names as the task model saves them, whatever prefix the checkpoint used.
  const std::string P = m.prefix();
  ParameterTable& t = m.params;
  auto encoder = [&](const std::string& name, const Shape& shape) -> Parameter& {
    return t.add(P + name, w.take(name, shape));
  };
  m.word = &encoder("embeddings.word_embeddings.weight", {config.vocab_size, C});
  m.position = &encoder("embeddings.position_embeddings.weight", {config.max_position_embeddings, C});
  if (family.token_types)
    m.token_type = &encoder("embeddings.token_type_embeddings.weight", {config.type_vocab_size, C});
  m.emb_ln_gamma = &encoder("embeddings.LayerNorm.weight", {C});
  m.emb_ln_beta = &encoder("embeddings.LayerNorm.bias", {C});
  if (!n.relative_bias.empty())
    m.relative_bias = &encoder(n.relative_bias + ".weight", {config.relative_attention_buckets, config.num_heads});
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = n.layer + std::to_string(i) + ".";
    TrainableLayer layer;
    const std::string fused = P + p + "attention.qkv";
    layer.qkv_weight = t.add_fused(fused + ".weight", {{P + p + n.q + ".weight", w.take(p + n.q + ".weight", {C, C})},
                                                       {P + p + n.k + ".weight", w.take(p + n.k + ".weight", {C, C})},
                                                       {P + p + n.v + ".weight", w.take(p + n.v + ".weight", {C, C})}});
    layer.qkv_bias = t.add_fused(fused + ".bias", {{P + p + n.q + ".bias", w.take(p + n.q + ".bias", {C})},
                                                   {P + p + n.k + ".bias", w.take(p + n.k + ".bias", {C})},
                                                   {P + p + n.v + ".bias", w.take(p + n.v + ".bias", {C})}});
    layer.out_weight = &encoder(p + n.out + ".weight", {C, C});
    layer.out_bias = &encoder(p + n.out + ".bias", {C});
    layer.ln1_gamma = &encoder(p + n.ln1 + ".weight", {C});
    layer.ln1_beta = &encoder(p + n.ln1 + ".bias", {C});
    layer.ffn_in_weight = &encoder(p + n.ffn_in + ".weight", {I, C});
    layer.ffn_in_bias = &encoder(p + n.ffn_in + ".bias", {I});
    layer.ffn_out_weight = &encoder(p + n.ffn_out + ".weight", {C, I});
    layer.ffn_out_bias = &encoder(p + n.ffn_out + ".bias", {C});
    layer.ln2_gamma = &encoder(p + n.ln2 + ".weight", {C});
    layer.ln2_beta = &encoder(p + n.ln2 + ".bias", {C});
    m.layers.push_back(layer);
  }

  // The head. Its tensors come from the checkpoint only when it was published with this head (a
  // token classifier's `classifier` is no sequence classifier's); what it lacks is initialised
  // as transformers initialises it. A body tensor (BERT's pooler) is taken wherever it is.
  const bool own_head = config.checkpoint_head == task;
  const auto has_head = [&](const std::string& name) { return own_head && w.has_head(name); };
  std::vector<std::string> initialised;
  const auto zeros = [](const Shape& s) {
    return Tensor::zeros(s, DType::f32, Device::cpu(), MemoryCategory::workspace);
  };
  auto head_linear = [&](const std::string& name, const std::string& saved, int64_t out, bool in_encoder,
                         Parameter** weight, Parameter** bias) {
    const bool present = in_encoder ? w.has(name + ".weight") : has_head(name + ".weight");
    if (present) {
      *weight = &t.add(saved + ".weight",
                       in_encoder ? w.take(name + ".weight", {out, C}) : w.take_head(name + ".weight", {out, C}));
      *bias = &t.add(saved + ".bias", in_encoder ? w.take(name + ".bias", {out}) : w.take_head(name + ".bias", {out}));
      return;
    }
    *weight = &t.add(saved + ".weight", normal_init({out, C}, config.initializer_range, init_seed, saved + ".weight"));
    *bias = &t.add(saved + ".bias", zeros({out}));
    initialised.insert(initialised.end(), {saved + ".bias", saved + ".weight"});
  };
  switch (task) {
    case Head::token_classification:
      head_linear(hn.token_classifier, hn.token_classifier, L, false, &m.classifier_weight, &m.classifier_bias);
      break;
    case Head::question_answering:
      head_linear(hn.qa_outputs, hn.qa_outputs, 2, false, &m.classifier_weight, &m.classifier_bias);
      break;
    case Head::masked_lm: {
      const int64_t V = config.vocab_size;
      head_linear(hn.mlm_dense, hn.mlm_dense, C, false, &m.mlm_dense_weight, &m.mlm_dense_bias);
      if (has_head(hn.mlm_norm + ".weight")) {
        m.mlm_norm_gamma = &t.add(hn.mlm_norm + ".weight", w.take_head(hn.mlm_norm + ".weight", {C}));
        m.mlm_norm_beta = &t.add(hn.mlm_norm + ".bias", w.take_head(hn.mlm_norm + ".bias", {C}));
      } else {
        Tensor ones = zeros({C});
        for (int64_t i = 0; i < C; ++i) ones.data<float>()[i] = 1.f;
        m.mlm_norm_gamma = &t.add(hn.mlm_norm + ".weight", ones);
        m.mlm_norm_beta = &t.add(hn.mlm_norm + ".bias", zeros({C}));
        initialised.insert(initialised.end(), {hn.mlm_norm + ".bias", hn.mlm_norm + ".weight"});
      }
      // Tied: the decoder is the word embeddings (not stored apart; a copy the checkpoint holds is left).
      if (config.tie_word_embeddings) {
        m.mlm_decoder = m.word;
      } else if (has_head(hn.mlm_decoder + ".weight")) {
        m.mlm_decoder = &t.add(hn.mlm_decoder + ".weight", w.take_head(hn.mlm_decoder + ".weight", {V, C}));
      } else {
        const std::string name = hn.mlm_decoder + ".weight";
        m.mlm_decoder = &t.add(name, normal_init({V, C}, config.initializer_range, init_seed, name));
        initialised.push_back(name);
      }
      // The output bias: the head's own (BERT's cls.predictions.bias, lm_head.bias), which the
      // decoder's .bias aliases; DistilBERT's is the projector's .bias.
      const std::string bias = hn.mlm_bias.empty() ? hn.mlm_decoder + ".bias" : hn.mlm_bias;
      const std::string alias = hn.mlm_decoder + ".bias";
      if (has_head(bias)) m.mlm_bias = &t.add(bias, w.take_head(bias, {V}));
      else if (has_head(alias)) m.mlm_bias = &t.add(bias, w.take_head(alias, {V}));
      else m.mlm_bias = &t.add(bias, zeros({V})), initialised.push_back(bias);
      const std::string act = hn.mlm_activation_from_config ? config.hidden_act : "gelu";
      check(act == "gelu" || act == "relu",
            "the masked-LM head's activation \"" + act + "\" is not one tach trains (gelu, relu)");
      m.mlm_gelu = act == "gelu";
      break;
    }
    default:
      head_linear(n.head_dense, n.head_dense_in_body ? P + n.head_dense : n.head_dense, C, n.head_dense_in_body,
                  &m.head_dense_weight, &m.head_dense_bias);
      head_linear(n.head_out, n.head_out, L, false, &m.classifier_weight, &m.classifier_bias);
  }
  if (notes) {
    for (auto& note : checkpoint.empty() ? w.finish() : w.finish(m.head_architecture, checkpoint))
      notes->push_back(note);
    if (!initialised.empty()) {
      std::sort(initialised.begin(), initialised.end());
      std::string list;
      for (const auto& name : initialised) list += (list.empty() ? "'" : ", '") + name + "'";
      // transformers' note, as from_pretrained prints it.
      notes->push_back("Some weights of " + m.head_architecture + " were not initialized from the model checkpoint" +
                       (checkpoint.empty() ? "" : " at " + checkpoint) + " and are newly initialized: [" + list +
                       "] (weights N(0, " + plain_number(config.initializer_range) + "), biases 0, seed " +
                       std::to_string(init_seed) +
                       "). You should probably TRAIN this model on a down-stream task to be able to use it for "
                       "predictions and inference.");
    }
  }
  return m;
}

void prepare_activations(EncoderActivations& a, const TrainableEncoder& m, int64_t B, int64_t T) {
  if (a.B == B && a.T == T) return;
  const int64_t N = B * T, C = m.shape.hidden, I = m.shape.intermediate, H = m.shape.heads;
  const Device device = m.device;
  auto make = [&](const Shape& s) { return Tensor::empty(s, DType::f32, device, MemoryCategory::activations); };
  // Views made here, once per shape, so that the step makes none: [N, cols] as [B, T, cols], its
  // column block [B, T, C] at `col`, and each sequence's first row as [B, C] (row stride T·cols).
  auto block = [&](const Tensor& t, int64_t cols, int64_t col) { return t.reshape({B, T, cols}).narrow(2, col, C); };
  auto first_rows = [&](const Tensor& t) { return t.reshape({B, T * C}).narrow(1, 0, C); };
  restart_activations(a);
  const bool fused = a.fused, checkpoint = a.checkpoint;
  const bool classifier = !m.per_token();
  a.B = B;
  a.T = T;
  a.emb_sum = make({N, C});
  a.emb_mean = make({N});
  a.emb_rstd = make({N});
  a.zero_types = Tensor::zeros({N}, DType::i32, device, MemoryCategory::activations);
  a.layers.resize(size_t(m.shape.layers));
  if (m.relative_bias) {
    const std::vector<int32_t> buckets =
        ops::relative_position_buckets(T, m.shape.relative_buckets, m.shape.relative_max_distance);
    a.buckets = Tensor::from_borrowed(const_cast<int32_t*>(buckets.data()), {T, T}, DType::i32, nullptr)
                    .to_device(device, MemoryCategory::activations);
    a.d_bias_parts = make({B, H, m.shape.relative_buckets});
  }
  // cuDNN's fused attention in bf16 runs on CUDA where it can (it saves each query row's
  // log-sum-exp, not the probabilities); a classifier's last layer, answering its first token
  // only, keeps tach's kernels.
  ops::TrainAttentionCase attention = ops::train_attention_case(device);
  attention.heads = attention.kv_heads = H, attention.head_size = C / H, attention.tokens = T;
  attention.score_bias = m.relative_bias != nullptr;
  const ops::TrainAttentionChoice layers_choice = ops::choose_train_attention(attention);
  attention.first_queries_only = classifier;
  const ops::TrainAttentionChoice last_choice = ops::choose_train_attention(attention);
  a.attention_kernels = ops::describe_train_attention(layers_choice, last_choice);
  for (auto& l : a.layers) {
    const bool last = &l == &a.layers.back();
    l.input = make({N, C});
    if (checkpoint && &l != &a.layers.front()) {
      // Every layer's intermediates in the first layer's buffers: only the inputs are kept.
      const LayerActivations& shared = a.layers.front();
      const Tensor input = l.input;
      l = shared;
      l.input = input;
      if (!last) continue;
      if (last_choice.kernel != layers_choice.kernel) {  // the last layer saves what its own kernels need
        const Shape saved = ops::train_attention_saved_shape(last_choice, fused, B, H, T);
        l.probs = saved.empty() ? Tensor() : make(saved);
      }
    } else {
      l.qkv = make({N, 3 * C});
      l.q = block(l.qkv, 3 * C, 0);
      l.k = block(l.qkv, 3 * C, C);
      l.v = block(l.qkv, 3 * C, 2 * C);
      const Shape saved = ops::train_attention_saved_shape(last ? last_choice : layers_choice, fused, B, H, T);
      if (!saved.empty()) l.probs = make(saved);
      l.context = make({N, C});
      l.attention_out = l.context.reshape({B, T, C});
    }
    // A sequence classifier's last layer after attention: the first token of each row only
    // (trainable_encoder_step.cc); a per-token head's runs on every token.
    const int64_t rows = last && classifier ? B : N;
    if (last && classifier) {
      l.q = block(l.qkv, 3 * C, 0).narrow(1, 0, 1);
      l.attention_out = l.context.reshape({B, T, C}).narrow(1, 0, 1);
    }
    l.residual1 = make({rows, C});
    if (rows == N) l.d_context = l.residual1.reshape({B, T, C});
    l.mean1 = make({rows});
    l.rstd1 = make({rows});
    l.hidden1 = make({rows, C});
    l.ffn_pre = make({rows, I});
    l.ffn_act = make({rows, I});
    l.residual2 = make({rows, C});
    l.mean2 = make({rows});
    l.rstd2 = make({rows});
  }
  if (m.per_token()) {
    a.sequence_output = make({N, C});
    if (m.task != Head::masked_lm) a.token_dropped = make({N, C});  // the dropout before the classifier or qa_outputs
    if (m.task == Head::masked_lm) {
      a.mlm_input = make({N, C});
      a.mlm_pre = make({N, C});
      a.mlm_act = make({N, C});
      a.mlm_hidden = make({N, C});
      a.mlm_mean = make({N});
      a.mlm_rstd = make({N});
    }
    // The masked LM's logits are sized by each forward: its predicted rows.
    a.logits = m.task == Head::masked_lm ? make({1, m.config.vocab_size}) : make({N, m.num_labels()});
  } else {
    LayerActivations& last = a.layers.back();
    last.context_cls = make({B, C});
    a.first = make({B, C});
    if (m.family().dropout_before_head_dense) a.first_dropped = make({B, C});
    a.head_hidden = make({B, C});
    a.head_dropped = make({B, C});
    a.logits = make({B, m.num_labels()});
  }
  a.d_hidden = make({N, C});
  a.d_scratch = make({N, C});
  a.d_qkv = make({N, 3 * C});
  a.d_q = block(a.d_qkv, 3 * C, 0);
  a.d_k = block(a.d_qkv, 3 * C, C);
  a.d_v = block(a.d_qkv, 3 * C, 2 * C);
  a.d_ffn = make({N, I});
  a.d_head = make({B, C});
  a.d_first = make({B, C});
  a.d_cls1 = make({B, C});
  a.d_cls2 = make({B, C});
  a.d_cls_ffn = make({B, I});
  if (classifier) {
    FirstTokenViews& v = a.first_token;
    v.context = first_rows(a.layers.back().context);
    v.input = first_rows(a.layers.back().input);
    v.d_hidden = first_rows(a.d_hidden);
    v.d_context = a.d_scratch.reshape({B, T, C}).narrow(1, 0, 1);
    v.d_context_rows = first_rows(a.d_scratch);
    v.d_q = a.d_q.narrow(1, 0, 1);
  }
}

int64_t TrainableEncoder::quantize_base_nf4() {
  int64_t n = 0;
  for (auto& l : layers) {
    if (!any_part_trainable(params, l.qkv_weight)) n += params.quantize_nf4(l.qkv_weight);
    for (Parameter* p : {l.out_weight, l.ffn_in_weight, l.ffn_out_weight})
      if (!p->trainable) params.quantize_nf4(*p), ++n;
  }
  // BERT's pooler is an nn.Linear that bitsandbytes quantizes too; a head module (DistilBERT's
  // pre_classifier, RoBERTa's classifier) trains (a module to save) and stays f32.
  if (head_dense_weight && !head_dense_weight->trainable) params.quantize_nf4(*head_dense_weight), ++n;
  // The masked-LM head's dense likewise (its decoder is the embeddings, which stay f32).
  if (mlm_dense_weight && !mlm_dense_weight->trainable) params.quantize_nf4(*mlm_dense_weight), ++n;
  return n;
}

}  // namespace tach::train

namespace tach::train {

std::unique_ptr<ForwardState> TrainableEncoder::new_state(bool fused) const {
  auto s = std::make_unique<EncoderActivations>();
  s->fused = fused;
  return s;
}

void TrainableEncoder::forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dropout) const {
  trainable_forward(*this, dynamic_cast<EncoderActivations&>(state), batch, dropout);
}

void TrainableEncoder::backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                                const DropoutRates& dropout) {
  auto& a = dynamic_cast<EncoderActivations&>(state);
  // d_logits has the logits' shape, on their device (the loss's output).
  const Tensor d =
      Tensor::from_borrowed(const_cast<float*>(d_logits), a.logits.shape(), DType::f32, nullptr, a.logits.device());
  trainable_backward(*this, a, batch, d, dropout);
}

}  // namespace tach::train

namespace tach::train {

std::vector<LinearSite> TrainableEncoder::linear_sites() {
  const model::EncoderTensorNames& n = family().names;
  const int64_t C = config.hidden_size, I = config.intermediate_size;
  std::vector<LinearSite> sites;
  for (size_t i = 0; i < layers.size(); ++i) {
    TrainableLayer& l = layers[i];
    const std::string p = prefix() + n.layer + std::to_string(i) + ".";
    sites.push_back({p + n.q, C, C, 0, &l.qkv_lora});
    sites.push_back({p + n.k, C, C, C, &l.qkv_lora});
    sites.push_back({p + n.v, C, C, 2 * C, &l.qkv_lora});
    sites.push_back({p + n.out, C, C, 0, &l.out_lora});
    sites.push_back({p + n.ffn_in, C, I, 0, &l.ffn_in_lora});
    sites.push_back({p + n.ffn_out, I, C, 0, &l.ffn_out_lora});
  }
  // A head dense in the body is a base linear LoRA may target (BERT's pooler.dense); a head
  // module's (pre_classifier, RoBERTa's classifier.dense) trains whole as a module to save.
  if (n.head_dense_in_body && head_dense_weight) sites.push_back({prefix() + n.head_dense, C, C, 0, &head_dense_lora});
  // The masked-LM head's dense is an nn.Linear of the model too (BERT's cls.predictions.transform.dense).
  if (mlm_dense_weight) sites.push_back({head_names().mlm_dense, C, C, 0, &mlm_dense_lora});
  return sites;
}

void TrainableEncoder::release_frozen_grads() {
  // A fused q|k|v gradient is dropped only when all three parts are frozen.
  for (auto& l : layers)
    for (FusedTensor* t : {&l.qkv_weight, &l.qkv_bias}) {
      if (!any_part_trainable(params, *t)) t->grad = Tensor();
    }
}

}  // namespace tach::train
