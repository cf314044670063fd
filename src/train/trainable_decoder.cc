// Binding any decoder family's checkpoint into the parameter table under its Hugging Face names
// (the family row's), and the parts of the model that are not the step.
#include "train/trainable_decoder.h"

#include <algorithm>

#include "ops/add.h"
#include "ops/copy_rows.h"
#include "tach/error.h"
#include "tach/plain_number.h"

namespace tach::train {

TrainableDecoder build_trainable_decoder(const model::DecoderConfig& config, const model::ModelFamily& family,
                                         model::WeightBinder& w, uint64_t init_seed, std::vector<std::string>* notes,
                                         Device device, Head task) {
  check(task == Head::sequence_classification || task == Head::token_classification ||
            task == Head::question_answering || task == Head::masked_lm,
        std::string("training needs a head, not \"") + head_name(task) + "\"");
  check(task == Head::masked_lm || task == Head::question_answering || config.num_labels() >= 1,
        "training needs a classification head: the model has no labels");
  check(family.decoder != nullptr, "build_trainable_decoder: " + std::string(family.name) + " is not a decoder family");
  TrainableDecoder m;
  m.device = device;
  m.params = ParameterTable(device);
  m.config = config;
  m.task = task;
  if (task == Head::question_answering) m.config.id2label = {"start", "end"};
  if (task == Head::masked_lm) m.config.id2label.clear();
  // …ForQuestionAnswering keeps the body under its own prefix in some families ("transformer.").
  m.body_prefix = task == Head::question_answering && !family.question_answering_body_prefix.empty()
                      ? family.question_answering_body_prefix
                      : family.body_prefix;
  m.names = family.decoder->names;
  m.classifier_architecture = model::architecture_for_head(family, task);
  m.embed_scale = model::embedding_scale(config, DType::f32);
  const model::DecoderTensorNames& n = m.names;
  const int64_t C = config.hidden_size, I = config.intermediate_size, D = config.head_dim;
  const int64_t HD = config.num_heads * D, KD = config.num_kv_heads * D, L = m.config.num_labels();
  const std::string& B = m.body_prefix;
  ParameterTable& t = m.params;
  // Names as the task model saves them (body prefix + the decoder's own), whatever prefix the
  // checkpoint used.
  auto body = [&](const std::string& name, const Shape& shape) -> Parameter& {
    return t.add(B + name, w.take(name, shape));
  };
  auto part = [&](const std::string& name, const Shape& shape) {
    return std::make_pair(B + name, w.take(name, shape));
  };
  m.embed = &body(n.embed + ".weight", {config.vocab_size, C});
  if (config.embedding_norm) m.embed_norm = &body(n.embed_norm + ".weight", {C});
  const int64_t QKV = config.qkv_width();
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    TrainableDecoderLayer l;
    if (i > 0 || config.first_attn_norm) l.attn_norm = &body(p + n.attn_norm + ".weight", {C});
    if (!n.qkv_fused.empty()) {  // stored fused (ModernBERT's Wqkv): one part
      l.qkv_weight = t.add_fused(B + p + n.qkv_fused + ".weight", {part(p + n.qkv_fused + ".weight", {QKV, C})});
      if (config.qkv_bias)
        l.qkv_bias = t.add_fused(B + p + n.qkv_fused + ".bias", {part(p + n.qkv_fused + ".bias", {QKV})});
    } else {
      l.qkv_weight = t.add_fused(
          B + p + "self_attn.qkv.weight",
          {part(p + n.q + ".weight", {HD, C}), part(p + n.k + ".weight", {KD, C}), part(p + n.v + ".weight", {KD, C})});
      if (config.qkv_bias)
        l.qkv_bias =
            t.add_fused(B + p + "self_attn.qkv.bias",
                        {part(p + n.q + ".bias", {HD}), part(p + n.k + ".bias", {KD}), part(p + n.v + ".bias", {KD})});
    }
    if (config.qk_norm) {
      l.q_norm = &body(p + n.q_norm + ".weight", {D});
      l.k_norm = &body(p + n.k_norm + ".weight", {D});
    }
    l.o_proj = &body(p + n.o + ".weight", {C, HD});
    if (config.o_bias) l.o_bias = &body(p + n.o + ".bias", {C});
    if (config.sandwich_norms) l.attn_out_norm = &body(p + n.attn_out_norm + ".weight", {C});
    l.mlp_norm = &body(p + n.mlp_norm + ".weight", {C});
    if (!n.gate_up_fused.empty()) {  // ModernBERT's Wi
      l.gate_up = t.add_fused(B + p + n.gate_up_fused + ".weight", {part(p + n.gate_up_fused + ".weight", {2 * I, C})});
      if (config.mlp_bias)
        l.gate_up_bias = t.add_fused(B + p + n.gate_up_fused + ".bias", {part(p + n.gate_up_fused + ".bias", {2 * I})});
    } else {
      l.gate_up = t.add_fused(B + p + "mlp.gate_up.weight",
                              {part(p + n.gate + ".weight", {I, C}), part(p + n.up + ".weight", {I, C})});
      if (config.mlp_bias)
        l.gate_up_bias =
            t.add_fused(B + p + "mlp.gate_up.bias", {part(p + n.gate + ".bias", {I}), part(p + n.up + ".bias", {I})});
    }
    l.down = &body(p + n.down + ".weight", {C, I});
    if (config.mlp_bias) l.down_bias = &body(p + n.down + ".bias", {C});
    if (config.sandwich_norms) l.mlp_out_norm = &body(p + n.mlp_out_norm + ".weight", {C});
    m.layers.push_back(l);
  }
  m.final_norm = &body(n.final_norm + ".weight", {C});
  // The head: what the checkpoint lacks is initialised, weights N(0, initializer_range), biases 0,
  // norms 1 (transformers draws ModernBERT's from a truncated normal; a fresh head is random either way).
  // The checkpoint's own head is read whole (a size that differs is an error naming it); another
  // task's lends what it holds at this head's names and shapes.
  const bool own_head =
      config.checkpoint_head == task || (task == Head::sequence_classification && config.checkpoint_head == Head::none);
  std::vector<std::string> initialised;
  auto head = [&](const std::string& name, const Shape& shape, bool weight) -> Parameter* {
    if (own_head ? w.has_head(name) : w.holds(name, shape, true)) return &t.add(name, w.take_head(name, shape));
    // Filled on the host, as the checkpoint's tensors arrive; the table copies it into the master.
    Tensor init = Tensor::zeros(shape, DType::f32, Device::cpu(), MemoryCategory::workspace);
    if (weight && shape.size() == 2) model::fill_normal(init, config.initializer_range, init_seed, name);
    if (weight && shape.size() == 1)
      for (int64_t k = 0; k < init.numel(); ++k) init.data<float>()[k] = 1.0f;
    initialised.push_back(name);
    return &t.add(name, init);
  };
  if (config.head_mlp) {
    m.head_dense = head(n.head_dense + ".weight", {C, C}, true);
    if (config.head_dense_bias) m.head_dense_bias = head(n.head_dense + ".bias", {C}, false);
    m.head_norm = head(n.head_norm + ".weight", {C}, true);
  }
  const model::HeadTensorNames& hn = family.head_names;
  switch (task) {
    case Head::masked_lm:  // the decoder: the embeddings where tied, with its own bias
      m.output_module = hn.mlm_decoder;
      m.score = config.mlm_tied ? m.embed : head(hn.mlm_decoder + ".weight", {config.vocab_size, C}, true);
      if (config.decoder_bias) m.score_bias = head(hn.mlm_decoder + ".bias", {config.vocab_size}, false);
      break;
    case Head::token_classification:
    case Head::question_answering:  // nn.Linear(hidden, L) with its bias in every family
      m.output_module = task == Head::question_answering ? hn.qa_outputs : hn.token_classifier;
      m.score = head(m.output_module + ".weight", {L, C}, true);
      m.score_bias = head(m.output_module + ".bias", {L}, false);
      break;
    default:
      m.output_module = family.classifier_weight.substr(0, family.classifier_weight.size() - 7);  // less ".weight"
      m.score = head(family.classifier_weight, {L, C}, true);
      if (config.classifier_bias) m.score_bias = head(m.output_module + ".bias", {L}, false);
  }
  if (notes) {
    for (auto& note : w.finish()) notes->push_back(note);
    if (!initialised.empty()) {
      std::string list;
      for (const auto& name : initialised) list += (list.empty() ? "" : ", ") + name;
      notes->push_back("newly initialised (the checkpoint has none): " + list + " — weights N(0, " +
                       plain_number(config.initializer_range) + "), biases 0, norms 1, seed " +
                       std::to_string(init_seed));
    }
  }
  return m;
}

std::unique_ptr<ForwardState> TrainableDecoder::new_state(bool fused) const {
  auto s = std::make_unique<DecoderActivations>();
  s->fused = fused;
  return s;
}

const Tensor& TrainableDecoder::norm_weight(const Parameter* p) const {
  if (!config.norm_plus_one) return p->value;
  return applied_norms_.at(p);
}

void TrainableDecoder::refresh_applied_norms() const {
  if (!config.norm_plus_one) return;
  // 1 + w as two ops on the model's device (ones copied in, then w added: 1.0f + w[i], as a host
  // loop would give), so that a GPU step reads nothing back.
  auto refresh = [&](const Parameter* p) {
    if (!p) return;
    const int64_t n = p->value.numel();
    Tensor& a = applied_norms_[p];
    if (!a.defined()) a = Tensor::empty(p->value.shape(), DType::f32, device, MemoryCategory::workspace);
    Tensor& one = ones_[n];
    if (!one.defined()) {
      Tensor host = Tensor::empty({n}, DType::f32, Device::cpu(), MemoryCategory::workspace);
      std::fill(host.data<float>(), host.data<float>() + n, 1.0f);
      one = host.on(device, MemoryCategory::workspace);
    }
    ops::copy_rows(a.reshape({1, n}), one.reshape({1, n}));
    ops::add_inplace(a, p->value);
  };
  for (const auto& l : layers)
    for (const Parameter* p : {l.attn_norm, l.q_norm, l.k_norm, l.attn_out_norm, l.mlp_norm, l.mlp_out_norm})
      refresh(p);
  refresh(final_norm);
  refresh(embed_norm);
  refresh(head_norm);
}

int64_t TrainableDecoder::quantize_base_nf4() {
  int64_t n = 0;
  for (auto& l : layers) {
    // ModernBERT's Wqkv and Wi are one nn.Linear each (one part), Llama's q, k, v three.
    if (!any_part_trainable(params, l.qkv_weight)) n += params.quantize_nf4(l.qkv_weight);
    if (!any_part_trainable(params, l.gate_up)) n += params.quantize_nf4(l.gate_up);
    for (Parameter* p : {l.o_proj, l.down})
      if (!p->trainable) params.quantize_nf4(*p), ++n;
  }
  // ModernBERT's head.dense is an nn.Linear outside modules_to_save: bitsandbytes quantizes it too.
  if (head_dense && !head_dense->trainable) params.quantize_nf4(*head_dense), ++n;
  return n;
}

std::vector<LinearSite> TrainableDecoder::linear_sites() {
  const int64_t C = config.hidden_size, I = config.intermediate_size, D = config.head_dim;
  const int64_t HD = config.num_heads * D, KD = config.num_kv_heads * D;
  std::vector<LinearSite> sites;
  for (size_t i = 0; i < layers.size(); ++i) {
    TrainableDecoderLayer& l = layers[i];
    const std::string p = body_prefix + "layers." + std::to_string(i) + ".";
    if (!names.qkv_fused.empty()) {
      sites.push_back({p + names.qkv_fused, C, config.qkv_width(), 0, &l.qkv_lora});
    } else {
      sites.push_back({p + names.q, C, HD, 0, &l.qkv_lora});
      sites.push_back({p + names.k, C, KD, HD, &l.qkv_lora});
      sites.push_back({p + names.v, C, KD, HD + KD, &l.qkv_lora});
    }
    sites.push_back({p + names.o, HD, C, 0, &l.o_lora});
    if (!names.gate_up_fused.empty()) {
      sites.push_back({p + names.gate_up_fused, C, 2 * I, 0, &l.gate_up_lora});
    } else {
      sites.push_back({p + names.gate, C, I, 0, &l.gate_up_lora});
      sites.push_back({p + names.up, C, I, I, &l.gate_up_lora});
    }
    sites.push_back({p + names.down, I, C, 0, &l.down_lora});
  }
  // ModernBERT's head.dense: a base linear LoRA may target (the classifier trains whole).
  if (head_dense) sites.push_back({names.head_dense, C, C, 0, &head_dense_lora});
  return sites;
}

void TrainableDecoder::release_frozen_grads() {
  for (auto& l : layers)
    for (FusedTensor* t : {&l.qkv_weight, &l.qkv_bias, &l.gate_up, &l.gate_up_bias})
      if (!t->name.empty() && !any_part_trainable(params, *t))
        t->grad = Tensor();  // name empty: the family has no such bias
}

}  // namespace tach::train
