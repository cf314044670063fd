// Binding a checkpoint into the parameter table, and sizing the saved activations.
#include "train/trainable_encoder.h"

#include <cmath>

#include "model/encoder_build.h"
#include "tach/error.h"

namespace tach::train {

namespace {

// transformers' _init_weights for a new nn.Linear: weight N(0, std), bias 0.
Tensor normal_init(const Shape& shape, float std, uint64_t seed, const std::string& name) {
  Tensor t = Tensor::empty(shape, DType::f32, Device::cpu(), MemoryCategory::workspace);
  model::fill_normal(t, std, seed, name);
  return t;
}

struct Names {
  std::string q, k, v, out, ln1, ffn_in, ffn_out, ln2;
};

Names layer_names(bool bert, int64_t i) {
  const std::string n = std::to_string(i);
  if (bert) {
    const std::string p = "encoder.layer." + n + ".";
    return {p + "attention.self.query", p + "attention.self.key", p + "attention.self.value",
            p + "attention.output.dense", p + "attention.output.LayerNorm", p + "intermediate.dense",
            p + "output.dense", p + "output.LayerNorm"};
  }
  const std::string p = "transformer.layer." + n + ".";
  return {p + "attention.q_lin", p + "attention.k_lin", p + "attention.v_lin", p + "attention.out_lin",
          p + "sa_layer_norm", p + "ffn.lin1", p + "ffn.lin2", p + "output_layer_norm"};
}

}  // namespace

TrainableEncoder build_trainable_encoder(const model::EncoderConfig& config, model::WeightBinder& w,
                                         uint64_t init_seed, std::vector<std::string>* notes) {
  check(config.num_labels() >= 1, "training needs a classification head: the model has no labels");
  TrainableEncoder m;
  m.config = config;
  m.shape = model::encoder_shape(config);
  const bool bert = m.bert();
  const int64_t C = config.hidden_size, I = config.intermediate_size, L = config.num_labels();
  // Names as the *ForSequenceClassification model saves them, whatever prefix the checkpoint used.
  const std::string P = bert ? "bert." : "distilbert.";
  ParameterTable& t = m.params;
  auto encoder = [&](const std::string& name, const Shape& shape) -> Parameter& {
    return t.add(P + name, w.take(name, shape));
  };
  m.word = &encoder("embeddings.word_embeddings.weight", {config.vocab_size, C});
  m.position = &encoder("embeddings.position_embeddings.weight", {config.max_position_embeddings, C});
  if (bert) m.token_type = &encoder("embeddings.token_type_embeddings.weight", {config.type_vocab_size, C});
  m.emb_ln_gamma = &encoder("embeddings.LayerNorm.weight", {C});
  m.emb_ln_beta = &encoder("embeddings.LayerNorm.bias", {C});
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const Names n = layer_names(bert, i);
    TrainableLayer layer;
    const std::string fused = P + (bert ? "encoder.layer." : "transformer.layer.") + std::to_string(i) + ".attention.qkv";
    layer.qkv_weight = t.add_fused(fused + ".weight", {{P + n.q + ".weight", w.take(n.q + ".weight", {C, C})},
                                                       {P + n.k + ".weight", w.take(n.k + ".weight", {C, C})},
                                                       {P + n.v + ".weight", w.take(n.v + ".weight", {C, C})}});
    layer.qkv_bias = t.add_fused(fused + ".bias", {{P + n.q + ".bias", w.take(n.q + ".bias", {C})},
                                                   {P + n.k + ".bias", w.take(n.k + ".bias", {C})},
                                                   {P + n.v + ".bias", w.take(n.v + ".bias", {C})}});
    layer.out_weight = &encoder(n.out + ".weight", {C, C});
    layer.out_bias = &encoder(n.out + ".bias", {C});
    layer.ln1_gamma = &encoder(n.ln1 + ".weight", {C});
    layer.ln1_beta = &encoder(n.ln1 + ".bias", {C});
    layer.ffn_in_weight = &encoder(n.ffn_in + ".weight", {I, C});
    layer.ffn_in_bias = &encoder(n.ffn_in + ".bias", {I});
    layer.ffn_out_weight = &encoder(n.ffn_out + ".weight", {C, I});
    layer.ffn_out_bias = &encoder(n.ffn_out + ".bias", {C});
    layer.ln2_gamma = &encoder(n.ln2 + ".weight", {C});
    layer.ln2_beta = &encoder(n.ln2 + ".bias", {C});
    m.layers.push_back(layer);
  }

  // The head. What the checkpoint lacks is initialised as transformers initialises it.
  std::vector<std::string> initialised;
  auto head_linear = [&](const std::string& name, const std::string& saved, int64_t out, bool in_encoder,
                         Parameter** weight, Parameter** bias) {
    const bool present = in_encoder ? w.has(name + ".weight") : w.has_head(name + ".weight");
    if (present) {
      *weight = &t.add(saved + ".weight", in_encoder ? w.take(name + ".weight", {out, C})
                                                     : w.take_head(name + ".weight", {out, C}));
      *bias = &t.add(saved + ".bias", in_encoder ? w.take(name + ".bias", {out}) : w.take_head(name + ".bias", {out}));
      return;
    }
    *weight = &t.add(saved + ".weight", normal_init({out, C}, config.initializer_range, init_seed, saved + ".weight"));
    *bias = &t.add(saved + ".bias", Tensor::zeros({out}, DType::f32, Device::cpu(), MemoryCategory::workspace));
    initialised.push_back(saved);
  };
  if (bert)
    head_linear("pooler.dense", "bert.pooler.dense", C, true, &m.head_dense_weight, &m.head_dense_bias);
  else
    head_linear("pre_classifier", "pre_classifier", C, false, &m.head_dense_weight, &m.head_dense_bias);
  head_linear("classifier", "classifier", L, false, &m.classifier_weight, &m.classifier_bias);
  if (notes) {
    for (auto& n : w.finish()) notes->push_back(n);
    if (!initialised.empty()) {
      std::string list;
      for (const auto& n : initialised) list += (list.empty() ? "" : ", ") + n;
      notes->push_back("newly initialised (the checkpoint has none): " + list + " — weights N(0, " +
                       std::to_string(config.initializer_range) + "), biases 0, seed " + std::to_string(init_seed));
    }
  }
  return m;
}

void prepare_activations(EncoderActivations& a, const TrainableEncoder& m, int64_t B, int64_t T) {
  if (a.B == B && a.T == T) return;
  const bool fused = a.fused, checkpoint = a.checkpoint;
  const int64_t N = B * T, C = m.shape.hidden, I = m.shape.intermediate, H = m.shape.heads;
  auto make = [](const Shape& s) { return Tensor::empty(s, DType::f32, Device::cpu(), MemoryCategory::activations); };
  a = EncoderActivations{};
  a.fused = fused;
  a.checkpoint = checkpoint;
  a.B = B;
  a.T = T;
  a.emb_sum = make({N, C});
  a.emb_mean = make({N});
  a.emb_rstd = make({N});
  a.layers.resize(size_t(m.shape.layers));
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
    } else {
      l.qkv = make({N, 3 * C});
      if (!fused) l.probs = make({B, H, T, T});
      l.context = make({N, C});
    }
    // The last layer after attention: the first token of each row only (trainable_encoder_step.cc).
    const int64_t rows = last ? B : N;
    l.residual1 = make({rows, C});
    l.mean1 = make({rows});
    l.rstd1 = make({rows});
    l.hidden1 = make({rows, C});
    l.ffn_pre = make({rows, I});
    l.ffn_act = make({rows, I});
    l.residual2 = make({rows, C});
    l.mean2 = make({rows});
    l.rstd2 = make({rows});
  }
  LayerActivations& last = a.layers.back();
  last.context_cls = make({B, C});
  a.first = make({B, C});
  a.head_hidden = make({B, C});
  a.head_dropped = make({B, C});
  a.logits = make({B, m.num_labels()});
  a.d_hidden = make({N, C});
  a.d_scratch = make({N, C});
  a.d_qkv = make({N, 3 * C});
  a.d_ffn = make({N, I});
  a.d_head = make({B, C});
  a.d_first = make({B, C});
  a.d_cls1 = make({B, C});
  a.d_cls2 = make({B, C});
  a.d_cls_ffn = make({B, I});
}

int64_t TrainableEncoder::quantize_base_nf4() {
  int64_t n = 0;
  for (auto& l : layers) {
    if (!any_part_trainable(params, l.qkv_weight)) params.quantize_nf4(l.qkv_weight), n += 3;
    for (Parameter* p : {l.out_weight, l.ffn_in_weight, l.ffn_out_weight})
      if (!p->trainable) params.quantize_nf4(*p), ++n;
  }
  // BERT's pooler is an nn.Linear that bitsandbytes quantizes too; DistilBERT's pre_classifier
  // trains (a module to save) and stays f32.
  if (head_dense_weight && !head_dense_weight->trainable) params.quantize_nf4(*head_dense_weight), ++n;
  return n;
}

}  // namespace tach::train

namespace tach::train {

std::string TrainableEncoder::architecture() const {
  return bert() ? "BertForSequenceClassification" : "DistilBertForSequenceClassification";
}

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
  trainable_backward(*this, dynamic_cast<EncoderActivations&>(state), batch, d_logits, dropout);
}

}  // namespace tach::train

namespace tach::train {

std::vector<LinearSite> TrainableEncoder::linear_sites() {
  const bool b = bert();
  const int64_t C = config.hidden_size, I = config.intermediate_size;
  const std::string P = b ? "bert." : "distilbert.";
  std::vector<LinearSite> sites;
  for (size_t i = 0; i < layers.size(); ++i) {
    TrainableLayer& l = layers[i];
    const std::string p = P + (b ? "encoder.layer." : "transformer.layer.") + std::to_string(i) + ".";
    const std::string a = p + (b ? "attention.self." : "attention.");
    sites.push_back({a + (b ? "query" : "q_lin"), C, C, 0, &l.qkv_lora});
    sites.push_back({a + (b ? "key" : "k_lin"), C, C, C, &l.qkv_lora});
    sites.push_back({a + (b ? "value" : "v_lin"), C, C, 2 * C, &l.qkv_lora});
    sites.push_back({p + (b ? "attention.output.dense" : "attention.out_lin"), C, C, 0, &l.out_lora});
    sites.push_back({p + (b ? "intermediate.dense" : "ffn.lin1"), C, I, 0, &l.ffn_in_lora});
    sites.push_back({p + (b ? "output.dense" : "ffn.lin2"), I, C, 0, &l.ffn_out_lora});
  }
  if (b) sites.push_back({"bert.pooler.dense", C, C, 0, &head_dense_lora});
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
