#include "model/embedding_model.h"

#include <algorithm>

#include <filesystem>
#include <optional>

#include "core/trace.h"
#include "model/safetensors.h"
#include "ops/activation.h"
#include "ops/linear.h"
#include "ops/pooling.h"
#include "tach/error.h"

namespace tach {

Tensor Model::embed(const TokenBatch&) const {
  throw Error(info().spec + " (" + info().architecture + ") is not an embedding model: it has a " +
              (info().classifier ? "classification head" : "language-model head") +
              " and no sentence-transformers config (modules.json)");
}

Tensor Model::hidden_rows(const TokenBatch& batch, const std::vector<int64_t>& rows) const {
  const int64_t B = batch.batch(), T = batch.seq_len();
  check(int64_t(rows.size()) == B,
        "hidden_rows: " + std::to_string(rows.size()) + " rows for a batch of " + std::to_string(B));
  for (const int64_t r : rows)
    check(r >= 0 && r < T, "hidden_rows: row " + std::to_string(r) + " outside the " + std::to_string(T) + " tokens");
  return checked_hidden_rows(batch, rows);
}

Tensor Model::checked_hidden_rows(const TokenBatch& batch, const std::vector<int64_t>& rows) const {
  const int64_t B = batch.batch(), T = batch.seq_len();
  const Tensor h = hidden_states(batch);  // [B, T, C] on the host
  const int64_t C = h.size(2);
  Tensor out = Tensor::empty({B, C}, DType::f32);
  for (int64_t b = 0; b < B; ++b)
    std::copy_n(h.data<float>() + (b * T + rows[size_t(b)]) * C, C, out.data<float>() + b * C);
  return out;
}

Tensor Model::measured_forward(const TokenBatch& batch) const {
  if (info().classifier) return classify(batch);
  if (info().head == Head::token_classification || info().head == Head::question_answering ||
      info().head == Head::masked_lm)
    return token_logits(batch);
  if (info().embedding) return embed(batch);
  if (info().causal_lm) return prefill_logits(batch);
  throw Error(info().spec + " (" + info().architecture +
              ") is neither a sequence classifier, an embedding model nor a causal LM: tach bench and profile measure "
              "those");
}

namespace model {

namespace {

// A Dense module's weights, f32: W [out, in] and b [out] (undefined without a bias).
struct DenseWeights {
  DenseModule config;
  Tensor weight, bias;
};

DenseWeights load_dense(const DenseModule& d, const std::string& dir, int64_t in_features) {
  namespace fs = std::filesystem;
  const fs::path where = fs::path(dir) / d.path;
  const std::string file = (where / "model.safetensors").string();
  check(d.in_features == in_features, file + ": the Dense module takes " + std::to_string(d.in_features) +
                                          " features, but what comes before it gives " + std::to_string(in_features));
  if (!fs::exists(file))
    throw Error(fs::exists(where / "pytorch_model.bin") ? (where / "pytorch_model.bin").string() +
                                                              ": tach does not read pickle files (they can run code); "
                                                              "save the Dense module with safetensors"
                                                        : file + " does not exist: the Dense module's weights");
  const SafetensorsFile st = SafetensorsFile::open(file);
  auto take = [&](const char* name, const Shape& shape) {
    const SafetensorsEntry* e = st.find(name);
    check(e != nullptr, file + ": no tensor '" + std::string(name) + "'");
    Tensor t = st.tensor(*e).to(DType::f32, MemoryCategory::weights);
    check(t.shape() == shape,
          file + ": '" + std::string(name) + "' is " + shape_str(t.shape()) + ", expected " + shape_str(shape));
    return t;
  };
  DenseWeights w{d, take("linear.weight", {d.out_features, d.in_features}), Tensor()};
  if (d.bias) w.bias = take("linear.bias", {d.out_features});
  return w;
}

class SentenceEmbedder final : public Model {
 public:
  SentenceEmbedder(std::unique_ptr<Model> inner, SentenceEmbeddingConfig config)
      : inner_(std::move(inner)), config_(std::move(config)), info_(inner_->info()) {
    const int64_t C = info_.hidden_size;
    check(config_.embedding_dimension == 0 || config_.embedding_dimension == C,
          info_.spec + ": the pooling config's word_embedding_dimension is " +
              std::to_string(config_.embedding_dimension) + ", but the model's hidden size is " + std::to_string(C));
    info_.embedding = true;
    info_.pooling = config_.pooling_name();
    info_.normalized = config_.normalize;
    info_.embedding_dim = int64_t(config_.modes.size()) * C;
    for (const DenseModule& d : config_.dense) {
      dense_.push_back(load_dense(d, config_.dir, info_.embedding_dim));
      info_.embedding_dim = d.out_features;
    }
    info_.max_seq_length = config_.max_seq_length;
    if (info_.max_positions > 0 && (info_.max_seq_length == 0 || info_.max_seq_length > info_.max_positions))
      info_.max_seq_length = info_.max_positions;  // sentence-transformers caps it the same way
    info_.lowercase_input = config_.do_lower_case;
    info_.prompts = config_.prompts;
    info_.default_prompt_name = config_.default_prompt_name;
    std::string dense;
    for (const DenseModule& d : config_.dense)
      dense +=
          ", Dense " + std::to_string(d.in_features) + "→" + std::to_string(d.out_features) + (d.tanh ? " tanh" : "");
    info_.notes.push_back("sentence embeddings: " + info_.pooling + " pooling" + dense +
                          (config_.normalize ? ", L2-normalised" : "") + " (" + config_.source + ")");
  }

  const ModelInfo& info() const override { return info_; }
  Tensor hidden_states(const TokenBatch& batch) const override { return inner_->hidden_states(batch); }
  Tensor classify(const TokenBatch& batch) const override { return inner_->classify(batch); }
  Tensor token_logits(const TokenBatch& batch) const override { return inner_->token_logits(batch); }
  Tensor lm_logits(const TokenBatch& batch) const override { return inner_->lm_logits(batch); }
  Tensor prefill_logits(const TokenBatch& batch) const override { return inner_->prefill_logits(batch); }
  Generation generate(const TokenBatch& prompts, const GenerateOptions& options) const override {
    return inner_->generate(prompts, options);
  }

  Tensor embed(const TokenBatch& batch) const override {
    Tensor out = pooled_one_token(batch);
    if (!out.defined()) {
      Tensor h = inner_->hidden_states(batch);  // [B, T, C]
      core::Span span(core::SpanKind::module, "pooler");
      out = Tensor::empty({batch.batch(), int64_t(config_.modes.size()) * info_.hidden_size}, DType::f32);
      ops::pooling_forward(out, h, batch.attention_mask, config_.modes);
    }
    const int64_t B = batch.batch();
    for (const DenseWeights& d : dense_) {
      // y [B, out] = act(x [B, in] · Wᵀ + b), the weights as the module stores them (unpacked: B is small).
      core::Span dense_span(core::SpanKind::module, d.config.path);
      Tensor y = Tensor::empty({B, d.config.out_features}, DType::f32);
      {
        core::Span op(core::SpanKind::op, "linear");
        if (op.active()) {
          const ops::OpCost c =
              ops::linear_cost(B, d.config.out_features, d.config.in_features, DType::f32, d.config.bias);
          op.set_cost(c.flops, c.bytes());
        }
        ops::linear_forward_cpu(y.data<float>(), out.data<float>(), d.weight.data<float>(),
                                d.bias.defined() ? d.bias.data<float>() : nullptr, B, d.config.out_features,
                                d.config.in_features);
      }
      if (d.config.tanh) ops::tanh_forward_cpu(y.data<float>(), y.data<float>(), y.numel());
      out = y;
    }
    if (config_.normalize) ops::l2_normalize_forward(out);
    return out;
  }

  ForwardCost hidden_states_cost(int64_t B, int64_t T) const override { return inner_->hidden_states_cost(B, T); }
  ForwardCost hidden_rows_cost(int64_t B, int64_t T, bool first_token) const override {
    return inner_->hidden_rows_cost(B, T, first_token);
  }

  ForwardCost forward_cost(int64_t B, int64_t T) const override {
    if (info_.head != Head::none) return inner_->forward_cost(B, T);  // measured_forward runs the head, not the pooling
    const bool one_token = one_token_mode().has_value();
    ForwardCost c = one_token ? inner_->hidden_rows_cost(B, T, *one_token_mode() == ops::PoolingMode::cls)
                              : inner_->hidden_states_cost(B, T);
    ops::OpCost p = one_token ? ops::OpCost{} : ops::pooling_cost(B, T, info_.hidden_size, config_.modes.size());
    for (const DenseModule& d : config_.dense) {
      p += ops::linear_cost(B, d.out_features, d.in_features, DType::f32, d.bias);
      if (d.tanh) p += ops::activation_cost(B * d.out_features);
    }
    if (config_.normalize) p += ops::l2_normalize_cost(B, info_.embedding_dim);
    c.flops += p.flops;
    c.bytes += p.bytes();
    return c;
  }

 private:
  // cls or last_token pooling alone: the one token per row the vector is.
  std::optional<ops::PoolingMode> one_token_mode() const {
    if (config_.modes.size() != 1) return std::nullopt;
    const ops::PoolingMode m = config_.modes.front();
    if (m != ops::PoolingMode::cls && m != ops::PoolingMode::last_token) return std::nullopt;
    return m;
  }

  // For cls or last-token pooling: the inner model's hidden state at each row's token (its last
  // layer run for those rows alone where it can), [B, C]; undefined for the other modes. The
  // token as pooling_forward picks it: the first real one (cls), or the last (a row of padding
  // only gives zeros, as sentence-transformers' masked gather does).
  Tensor pooled_one_token(const TokenBatch& batch) const {
    const std::optional<ops::PoolingMode> mode = one_token_mode();
    if (!mode) return Tensor();
    const int64_t B = batch.batch(), T = batch.seq_len(), C = info_.hidden_size;
    const int32_t* mask = batch.attention_mask.data<int32_t>();
    std::vector<int64_t> rows(size_t(B), 0);
    std::vector<bool> padding_only(size_t(B), false);
    for (int64_t b = 0; b < B; ++b) {
      const int32_t* m = mask + b * T;
      int64_t t = *mode == ops::PoolingMode::cls ? 0 : T - 1;
      const int64_t step = *mode == ops::PoolingMode::cls ? 1 : -1;
      while (t >= 0 && t < T && !m[t]) t += step;
      padding_only[size_t(b)] = t < 0 || t >= T;
      rows[size_t(b)] = padding_only[size_t(b)] ? 0 : t;
    }
    Tensor out = inner_->hidden_rows(batch, rows);
    core::Span span(core::SpanKind::module, "pooler");
    for (int64_t b = 0; b < B; ++b)
      if (padding_only[size_t(b)] && *mode == ops::PoolingMode::last_token)
        std::fill_n(out.data<float>() + b * C, C, 0.0f);
    return out;
  }

  Tensor checked_hidden_rows(const TokenBatch& batch, const std::vector<int64_t>& rows) const override {
    return inner_->hidden_rows(batch, rows);
  }

  std::unique_ptr<Model> inner_;
  SentenceEmbeddingConfig config_;
  ModelInfo info_;
  std::vector<DenseWeights> dense_;
};

}  // namespace

std::unique_ptr<Model> with_sentence_embedding(std::unique_ptr<Model> inner, const SentenceEmbeddingConfig& config) {
  return std::make_unique<SentenceEmbedder>(std::move(inner), config);
}

}  // namespace model

}  // namespace tach
