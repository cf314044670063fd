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

// The first elements of a contiguous buffer as a tensor of `shape`: a layer with pruned heads
// uses less of the buffers sized for the widest layer.
Tensor leading(const Tensor& buffer, const Shape& shape) {
  return buffer.reshape({buffer.numel()}).narrow(0, 0, shape_numel(shape)).reshape(shape);
}

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
    // The heads the layer keeps (config.json's pruned_heads removes some): its attention is A wide.
    layer.heads = config.heads_in_layer(i);
    const int64_t A = layer.heads * config.head_dim();
    const std::string fused = P + p + "attention.qkv";
    layer.qkv_weight = t.add_fused(fused + ".weight", {{P + p + n.q + ".weight", w.take(p + n.q + ".weight", {A, C})},
                                                       {P + p + n.k + ".weight", w.take(p + n.k + ".weight", {A, C})},
                                                       {P + p + n.v + ".weight", w.take(p + n.v + ".weight", {A, C})}});
    layer.qkv_bias = t.add_fused(fused + ".bias", {{P + p + n.q + ".bias", w.take(p + n.q + ".bias", {A})},
                                                   {P + p + n.k + ".bias", w.take(p + n.k + ".bias", {A})},
                                                   {P + p + n.v + ".bias", w.take(p + n.v + ".bias", {A})}});
    layer.out_weight = &encoder(p + n.out + ".weight", {C, A});
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
  const int64_t N = B * T, C = m.shape.hidden, I = m.shape.intermediate, H = m.shape.heads, D = m.shape.head_dim();
  // The widest layer's attention: the buffers layers share (checkpointing's, the backward's
  // d(q|k|v)) are sized for it; C unless heads were pruned.
  int64_t widest = 0;
  for (const TrainableLayer& l : m.layers) widest = std::max(widest, l.heads);
  const Device device = m.device;
  auto make = [&](const Shape& s) { return Tensor::empty(s, DType::f32, device, MemoryCategory::activations); };
  // Views made here, once per shape, so that the step makes none: [N, cols] as [B, T, cols], its
  // column block [B, T, width] at `col`, and each sequence's first row as [B, width] (row stride T·width).
  auto block = [&](const Tensor& t, int64_t cols, int64_t col, int64_t width) {
    return t.reshape({B, T, cols}).narrow(2, col, width);
  };
  auto first_rows = [&](const Tensor& t, int64_t width) { return t.reshape({B, T * width}).narrow(1, 0, width); };
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
  attention.head_size = D, attention.tokens = T;
  attention.score_bias = m.relative_bias != nullptr;
  auto choose = [&](int64_t heads, bool first_queries_only) {
    attention.heads = attention.kv_heads = heads;
    attention.first_queries_only = first_queries_only;
    return ops::choose_train_attention(attention);
  };
  const ops::TrainAttentionChoice layers_choice = choose(m.layers.front().heads, false);
  const ops::TrainAttentionChoice last_choice = choose(m.layers.back().heads, classifier);
  a.attention_kernels = ops::describe_train_attention(layers_choice, last_choice);
  a.d_qkv = make({N, 3 * widest * D});
  // Gradient checkpointing: every layer's intermediates in one set of buffers, sized for the
  // widest layer (each layer views their leading elements); only the inputs are kept per layer.
  // The last layer keeps its own past attention (a classifier's runs on B rows).
  LayerActivations shared;
  const ops::TrainAttentionChoice shared_choice = choose(widest, false);
  if (checkpoint) {
    shared.qkv = make({N, 3 * widest * D});
    const Shape saved = ops::train_attention_saved_shape(shared_choice, fused, B, widest, T);
    if (!saved.empty()) shared.probs = make(saved);
    shared.context = make({N, widest * D});
  }
  if (checkpoint && a.layers.size() > 1) {  // past attention, for the layers before the last
    for (Tensor* t : {&shared.residual1, &shared.hidden1, &shared.residual2}) *t = make({N, C});
    for (Tensor* t : {&shared.ffn_pre, &shared.ffn_act}) *t = make({N, I});
    for (Tensor* t : {&shared.mean1, &shared.rstd1, &shared.mean2, &shared.rstd2}) *t = make({N});
  }
  for (size_t li = 0; li < a.layers.size(); ++li) {
    LayerActivations& l = a.layers[li];
    const bool last = li + 1 == a.layers.size(), first_token = last && classifier;
    const int64_t heads = m.layers[li].heads, A = heads * D;
    l.input = make({N, C});
    const ops::TrainAttentionChoice kernels = choose(heads, first_token);
    const Shape saved = ops::train_attention_saved_shape(kernels, fused, B, heads, T);
    l.qkv = checkpoint ? leading(shared.qkv, {N, 3 * A}) : make({N, 3 * A});
    if (!saved.empty())  // a last layer whose kernels differ from the others' saves what its own need
      l.probs = checkpoint && shared.probs.defined() && kernels.kernel == shared_choice.kernel
                    ? leading(shared.probs, saved)
                    : make(saved);
    l.context = checkpoint ? leading(shared.context, {N, A}) : make({N, A});
    l.q = block(l.qkv, 3 * A, 0, A);
    l.k = block(l.qkv, 3 * A, A, A);
    l.v = block(l.qkv, 3 * A, 2 * A, A);
    l.attention_out = l.context.reshape({B, T, A});
    l.d_qkv = leading(a.d_qkv, {N, 3 * A});
    l.d_q = block(l.d_qkv, 3 * A, 0, A);
    l.d_k = block(l.d_qkv, 3 * A, A, A);
    l.d_v = block(l.d_qkv, 3 * A, 2 * A, A);
    // A sequence classifier's last layer after attention: the first token of each row only
    // (trainable_encoder_step.cc); a per-token head's runs on every token.
    const int64_t rows = first_token ? B : N;
    if (first_token) {
      l.q = l.q.narrow(1, 0, 1);
      l.attention_out = l.attention_out.narrow(1, 0, 1);
      l.context_cls = make({B, A});
    }
    if (checkpoint && !last) {
      l.residual1 = shared.residual1, l.hidden1 = shared.hidden1, l.residual2 = shared.residual2;
      l.ffn_pre = shared.ffn_pre, l.ffn_act = shared.ffn_act;
      l.mean1 = shared.mean1, l.rstd1 = shared.rstd1, l.mean2 = shared.mean2, l.rstd2 = shared.rstd2;
    } else {
      for (Tensor* t : {&l.residual1, &l.hidden1, &l.residual2}) *t = make({rows, C});
      for (Tensor* t : {&l.ffn_pre, &l.ffn_act}) *t = make({rows, I});
      for (Tensor* t : {&l.mean1, &l.rstd1, &l.mean2, &l.rstd2}) *t = make({rows});
    }
    l.d_context_rows = leading(l.residual1, {rows, A});
    if (rows == N) l.d_context = l.d_context_rows.reshape({B, T, A});
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
    a.first = make({B, C});
    if (m.family().dropout_before_head_dense) a.first_dropped = make({B, C});
    a.head_hidden = make({B, C});
    a.head_dropped = make({B, C});
    a.logits = make({B, m.num_labels()});
  }
  a.d_hidden = make({N, C});
  a.d_scratch = make({N, C});
  a.d_ffn = make({N, I});
  a.d_head = make({B, C});
  a.d_first = make({B, C});
  a.d_cls1 = make({B, C});
  a.d_cls2 = make({B, C});
  a.d_cls_ffn = make({B, I});
  if (classifier) {
    const LayerActivations& last = a.layers.back();
    const int64_t A = m.layers.back().heads * D;
    FirstTokenViews& v = a.first_token;
    v.context = first_rows(last.context, A);
    v.input = first_rows(last.input, C);
    v.d_hidden = first_rows(a.d_hidden, C);
    const Tensor d_context = leading(a.d_scratch, {N, A});  // d(context) of the last layer, whose rows it reads
    v.d_context = d_context.reshape({B, T, A}).narrow(1, 0, 1);
    v.d_context_rows = first_rows(d_context, A);
    v.d_q = last.d_q.narrow(1, 0, 1);
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
    // q, k, v [A, C] and the output [C, A]: A = the layer's heads x head_dim (fewer where pruned).
    const int64_t A = l.heads * config.head_dim();
    sites.push_back({p + n.q, C, A, 0, &l.qkv_lora});
    sites.push_back({p + n.k, C, A, A, &l.qkv_lora});
    sites.push_back({p + n.v, C, A, 2 * A, &l.qkv_lora});
    sites.push_back({p + n.out, A, C, 0, &l.out_lora});
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
