// The EncoderModel behind tach/model.h: loads any post-LN encoder family (BERT, DistilBERT,
// RoBERTa, XLM-RoBERTa) from a preset, a directory or the hub cache, and runs it.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "core/trace.h"
#include "model/activation_dtype.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/encoder_build.h"
#include "model/peft_adapter.h"
#include "model/presets.h"
#include "model/compute_note.h"
#include "model/encoder_model.h"
#include "ops/linear.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/system_info.h"

namespace tach {

namespace {

class Encoder final : public EncoderModel {
 public:
  Encoder(ModelInfo info, model::BuiltEncoder built, model::EncoderConfig config)
      : info_(std::move(info)), m_(std::move(built)), config_(std::move(config)) {}

  const ModelInfo& info() const override { return info_; }

  // Returned on the host: callers (pooling, the golden comparisons) read them there.
  Tensor hidden_states(const TokenBatch& batch) const override {
    return model::encoder_forward(m_.weights, m_.shape, batch, nullptr).on(Device::cpu());
  }

  // One row per sequence (cls pooling reads the first): the last layer for those rows alone, as
  // classify runs it.
  Tensor checked_hidden_rows(const TokenBatch& batch, const std::vector<int64_t>& rows) const override {
    model::SequenceRows at;
    for (const int64_t r : rows) at.push_back({r});
    return model::encoder_forward_rows(m_.weights, m_.shape, batch, at, nullptr).on(Device::cpu());
  }

  ForwardCost hidden_rows_cost(int64_t B, int64_t T, bool first_token) const override {
    const ops::OpCost c = model::encoder_cost(
        m_.shape, B, T, first_token ? model::EncoderOutput::first_token : model::EncoderOutput::every_token);
    return {c.flops, c.bytes()};
  }

  Tensor classify(const TokenBatch& batch) const override {
    check(
        m_.head.classifier.out != nullptr,
        info_.spec + " (" + info_.architecture + ") has " +
            (info_.head == Head::none ? std::string("no head") : std::string("a ") + head_name(info_.head) + " head") +
            ": it has no sequence-classification head to produce logits");
    // The head reads each row's first token only, and so does the last layer (encoder.h).
    Tensor first = model::encoder_forward(m_.weights, m_.shape, batch, nullptr, model::EncoderOutput::first_token);
    const int64_t B = batch.batch(), C = m_.shape.hidden;
    core::Span head_span(core::SpanKind::module, "classifier");
    const Device device = first.device();
    Tensor pooled = Tensor::empty({B, C}, DType::f32, device);
    ops::linear_forward(pooled, first, *m_.head.classifier.dense);
    Tensor logits = Tensor::empty({B, config_.num_labels()}, DType::f32, device);
    ops::linear_forward(logits, pooled, *m_.head.classifier.out);
    // Logits go back to the host (the copy waits for the GPU, so a timed call includes its work).
    return logits.on(Device::cpu());
  }

  // The per-token heads on every token: [B, T, outputs] on the host.
  Tensor token_logits(const TokenBatch& batch) const override {
    if (!m_.head.per_token && !m_.head.mlm.decoder) return Model::token_logits(batch);
    const Tensor h = model::encoder_forward(m_.weights, m_.shape, batch, nullptr);  // [B, T, C]
    const int64_t B = batch.batch(), T = batch.seq_len();
    return model::per_token_head_forward(m_.head, h.reshape({B * T, m_.shape.hidden}))
        .reshape({B, T, m_.head.outputs})
        .on(Device::cpu());
  }

  // The per-token head at the rows asked for, and the last layer for them alone: [R, outputs] on the host.
  Tensor checked_token_logits_at(const TokenBatch& batch, const model::SequenceRows& rows) const override {
    if (!m_.head.per_token && !m_.head.mlm.decoder) return Model::token_logits(batch);         // its error
    const Tensor h = model::encoder_forward_rows(m_.weights, m_.shape, batch, rows, nullptr);  // [R, C]
    return model::per_token_head_forward(m_.head, h).on(Device::cpu());
  }

  ForwardCost hidden_states_cost(int64_t B, int64_t T) const override {
    const ops::OpCost c = model::encoder_cost(m_.shape, B, T);
    return {c.flops, c.bytes()};
  }

  ForwardCost forward_cost(int64_t B, int64_t T) const override {
    // A classifier's forward is classify: its last layer runs for the first tokens only.
    const bool classifier = m_.head.classifier.out != nullptr;
    ops::OpCost c = model::encoder_cost(
        m_.shape, B, T, classifier ? model::EncoderOutput::first_token : model::EncoderOutput::every_token);
    if (classifier) {
      c += ops::linear_cost(B, m_.shape.hidden, m_.shape.hidden, info_.compute, true);
      c += ops::linear_cost(B, config_.num_labels(), m_.shape.hidden, info_.compute, true);
    }
    if (m_.head.per_token || m_.head.mlm.decoder)
      c += model::per_token_head_cost(m_.head, B * T, m_.shape.hidden, info_.compute);
    return {c.flops, c.bytes()};
  }

 private:
  ModelInfo info_;
  model::BuiltEncoder m_;
  model::EncoderConfig config_;
};

}  // namespace

Tensor Model::lm_logits(const TokenBatch&) const {
  throw Error(info().spec + " (" + info().architecture +
              ") has no language-model head: vocabulary logits need a "
              "causal LM such as LlamaForCausalLM");
}

Tensor Model::prefill_logits(const TokenBatch& batch) const { return lm_logits(batch); }

Generation Model::generate(const TokenBatch&, const GenerateOptions&) const {
  throw Error(info().spec + " (" + info().architecture + ") cannot generate text: it is not a causal LM");
}

namespace model {

ArchitectureSummary summarize_encoder(const ModelFamily& family, const ModelLocation& loc) {
  const EncoderConfig c = loc.kind == ModelLocation::Kind::preset
                              ? preset_config(loc.preset).config
                              : load_encoder_config((std::filesystem::path(loc.dir) / "config.json").string());
  ArchitectureSummary a;
  a.name = c.architecture.empty() ? c.model_type : c.architecture;
  a.V = c.vocab_size, a.C = c.hidden_size, a.L = c.num_layers, a.H = c.num_heads, a.KVH = c.num_heads;
  a.D = c.head_dim(), a.I = c.intermediate_size, a.P = c.max_position_embeddings, a.Tt = c.type_vocab_size;
  a.relative_bias = c.relative_attention_buckets * c.num_heads;
  a.labels = c.num_labels();
  a.head = c.checkpoint_head;
  a.tied = c.tie_word_embeddings;
  a.decoder_bias = !family.head_names.mlm_bias.empty();
  // A bare model as published has a pooler (BERT, RoBERTa, MPNet; DistilBERT none); the task
  // models' bodies have none.
  a.bare_pooler = c.checkpoint_head == Head::none && (c.family->token_types || c.family->positions_after_padding);
  if (c.family && c.family->positions_after_padding) a.max_row_tokens = c.max_position_embeddings - c.pad_token_id - 1;
  // Heads pruned (config.json's pruned_heads): the formulas count every layer with all its heads;
  // each removed head takes D rows and biases of q, k and v and D columns of the output.
  for (const auto& removed : c.pruned_heads) a.other_params -= int64_t(removed.size()) * (4 * a.C * a.D + 3 * a.D);
  return a;
}

std::unique_ptr<Model> load_encoder(const ModelFamily& family, const ModelLocation& loc, const LoadOptions& options) {
  const std::string& spec = loc.spec;
  ModelInfo info;
  info.spec = spec;
  info.compute = options.compute;
  info.gemm_tf32 = options.allow_tf32 && options.compute == DType::f32;
  info.device = options.device;
  model::EncoderConfig config;
  model::WeightStore store;
  std::optional<model::WeightBinder> binder;
  std::string config_source = "config.json";
  if (loc.kind == model::ModelLocation::Kind::preset) {
    model::PresetConfig preset = model::preset_config(loc.preset);
    config = preset.config;
    info.source = "synthetic weights (seed " + std::to_string(options.seed) + "): " + preset.description;
    binder.emplace(model::WeightBinder::synthetic(options.seed));
  } else {
    config_source = (std::filesystem::path(loc.dir) / "config.json").string();
    config = model::load_encoder_config(config_source);
    store = model::open_checkpoint_weights(loc.dir);
    info.disk_bytes = model::safetensors_bytes(loc.dir);
    info.source = loc.dir + (loc.revision.empty() ? "" : " (revision " + loc.revision + ")");
    binder.emplace(store, std::vector<std::string>{family.body_prefix, ""}, family.probe, config_source);
    if (config.checkpoint_head == Head::none && store.find(family.classifier_weight)) {
      // Real case: distilbert-base-uncased-finetuned-sst-2-english names DistilBertModel but
      // ships a trained head. Use it rather than drop it.
      config.classification_head = true;
      config.checkpoint_head = Head::sequence_classification;
      info.notes.push_back("config.json names " + config.architecture +
                           " but the checkpoint has a classifier; loaded as a sequence classifier");
    }
  }

  if (!options.adapter.empty()) {
    auto adapter = model::PeftAdapter::open(options.adapter);
    if (adapter->head_tensor(family.classifier_weight)) {
      // The adapter's classifier: a token classifier's own (BERT's and DistilBERT's share the
      // name), else a sequence classifier on the body.
      if (config.checkpoint_head != Head::token_classification) config.checkpoint_head = Head::sequence_classification;
      config.classification_head = config.checkpoint_head == Head::sequence_classification;
      config.id2label = model::labels_with_adapter(*adapter, family.classifier_weight, config.id2label);
    }
    binder->set_adapter(adapter, {family.body_prefix}, spec);
  }
  // The head: --head's, else the checkpoint's own. One it was not published with is new.
  const Head head = options.head.value_or(config.checkpoint_head);
  model::HeadSource source;
  source.fresh = head != config.checkpoint_head;
  source.std = config.initializer_range;
  source.seed = options.seed;
  source.body_prefix = family.body_prefix;
  if (source.fresh && options.new_head_labels > 0 && options.new_head_labels != config.num_labels()) {
    config.id2label.clear();
    config.label2id.clear();
    for (int64_t i = 0; i < options.new_head_labels; ++i) {
      config.id2label.push_back("LABEL_" + std::to_string(i));
      config.label2id[config.id2label.back()] = int(i);
    }
  }
  config.classification_head = head == Head::sequence_classification;
  model::BuiltEncoder built = model::build_encoder(
      config, family, *binder,
      {options.device, options.compute, false, options.allow_tf32 && options.compute == DType::f32}, head,
      config.num_labels(), source);
  info.activations = built.weights.activations;
  if (const std::string note = model::activations_note(options.compute, info.activations, options.device);
      !note.empty())
    info.notes.push_back(note);
  const std::string architecture = model::architecture_for_head(family, head);
  for (auto& n : binder->finish(architecture, loc.dir.empty() ? spec : loc.dir)) info.notes.push_back(n);
  if (const std::string note = model::new_head_note(source, architecture, loc.dir.empty() ? spec : loc.dir);
      !note.empty())
    info.notes.push_back(note);
  store.drop_resident_pages();  // the layers are packed copies; see load_qwen2

  info.model_type = config.model_type;
  info.tokenizer_hint = family.tokenizer_hint;
  info.architecture = architecture;
  info.classifier = head == Head::sequence_classification;
  info.head = head;
  info.checkpoint_head = config.checkpoint_head;
  info.bidirectional = true;
  if (head == Head::sequence_classification || head == Head::token_classification) info.labels = config.id2label;
  info.problem_type = config.problem_type;
  if (info.problem_type.empty())  // transformers infers it the same way at the first loss
    info.problem_type = config.num_labels() == 1 ? "regression" : "single_label_classification";
  info.parameters = binder->parameters() + source.initialised_parameters;
  info.weights_dtype = binder->stored_dtypes();
  info.vocab_size = config.vocab_size;
  info.hidden_size = config.hidden_size;
  info.num_layers = config.num_layers;
  info.num_heads = config.num_heads;
  info.intermediate_size = config.intermediate_size;
  // The tokens a row can hold: RoBERTa's positions start after padding_idx (514 → 512).
  info.max_positions = built.shape.max_positions - built.shape.positions_needed(0);
  info.type_vocab_size = config.type_vocab_size;
  info.pad_token_id = static_cast<int32_t>(config.pad_token_id);
  info.positions = std::string(config.family->positions_after_padding ? "learned absolute, from padding_idx + 1"
                                                                      : "learned absolute") +
                   (built.shape.relative_buckets > 0 ? ", plus a relative position bias on the scores" : "");
  if (const std::string n = model::compute_note(options.compute, options.device, false, options.allow_tf32); !n.empty())
    info.notes.push_back(n);
  return std::make_unique<Encoder>(std::move(info), std::move(built), std::move(config));
}

}  // namespace model

int64_t TokenBatch::real_tokens() const {
  int64_t n = 0;
  const int32_t* m = attention_mask.data<int32_t>();
  for (int64_t i = 0; i < attention_mask.numel(); ++i) n += m[i];
  return n;
}

TokenBatch TokenBatch::on(Device device) const {
  TokenBatch out;
  for (auto [from, to] : {std::pair{&input_ids, &out.input_ids}, std::pair{&attention_mask, &out.attention_mask},
                          std::pair{&token_type_ids, &out.token_type_ids}})
    if (from->defined()) *to = from->on(device);
  return out;
}

TokenBatch TokenBatch::from_rows(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id,
                                 const std::vector<std::vector<int32_t>>& type_rows) {
  check(!rows.empty(), "empty batch: no rows of token ids");
  check(type_rows.empty() || type_rows.size() == rows.size(), "token_type_ids has " + std::to_string(type_rows.size()) +
                                                                  " rows for " + std::to_string(rows.size()) +
                                                                  " rows of input_ids");
  size_t T = 0;
  for (const auto& r : rows) T = std::max(T, r.size());
  check(T > 0, "every row of token ids is empty");
  const auto B = static_cast<int64_t>(rows.size());
  TokenBatch b;
  b.input_ids = Tensor::empty({B, int64_t(T)}, DType::i32);
  b.attention_mask = Tensor::zeros({B, int64_t(T)}, DType::i32);
  if (!type_rows.empty()) b.token_type_ids = Tensor::zeros({B, int64_t(T)}, DType::i32);
  for (int64_t r = 0; r < B; ++r) {
    const auto& row = rows[size_t(r)];
    int32_t* ids = b.input_ids.data<int32_t>() + r * int64_t(T);
    int32_t* mask = b.attention_mask.data<int32_t>() + r * int64_t(T);
    for (size_t t = 0; t < T; ++t) {
      ids[t] = t < row.size() ? row[t] : pad_id;
      mask[t] = t < row.size() ? 1 : 0;
    }
    if (!type_rows.empty()) {
      check(type_rows[size_t(r)].size() == row.size(),
            "row " + std::to_string(r) + ": " + std::to_string(type_rows[size_t(r)].size()) + " token_type_ids for " +
                std::to_string(row.size()) + " ids");
      int32_t* tt = b.token_type_ids.data<int32_t>() + r * int64_t(T);
      for (size_t t = 0; t < row.size(); ++t) tt[t] = type_rows[size_t(r)][t];
    }
  }
  return b;
}

Tensor scores_from_logits(const Tensor& logits, const std::string& problem_type) {
  check(logits.dim() == 2 && logits.dtype() == DType::f32, "scores_from_logits: logits must be f32 [B, L]");
  Tensor out = logits.to(DType::f32);
  const int64_t B = logits.size(0), L = logits.size(1);
  float* p = out.data<float>();
  for (int64_t b = 0; b < B; ++b) {
    float* row = p + b * L;
    if (problem_type == "multi_label_classification") {
      for (int64_t l = 0; l < L; ++l) row[l] = 1.0f / (1.0f + std::exp(-row[l]));
    } else if (problem_type != "regression") {
      float mx = row[0], sum = 0;
      for (int64_t l = 1; l < L; ++l) mx = std::max(mx, row[l]);
      for (int64_t l = 0; l < L; ++l) sum += (row[l] = std::exp(row[l] - mx));
      for (int64_t l = 0; l < L; ++l) row[l] /= sum;
    }
  }
  return out;
}

}  // namespace tach
