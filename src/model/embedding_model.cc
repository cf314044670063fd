#include "model/embedding_model.h"

#include <algorithm>

#include "core/trace.h"
#include "ops/pooling.h"
#include "tach/error.h"

namespace tach {

Tensor Model::embed(const TokenBatch&) const {
  throw Error(info().spec + " (" + info().architecture + ") is not an embedding model: it has a " +
              (info().classifier ? "classification head" : "language-model head") +
              " and no sentence-transformers config (modules.json)");
}

Tensor Model::measured_forward(const TokenBatch& batch) const {
  if (info().classifier) return classify(batch);
  if (info().embedding) return embed(batch);
  if (info().causal_lm) return prefill_logits(batch);
  throw Error(info().spec + " (" + info().architecture +
              ") is neither a sequence classifier, an embedding model nor a causal LM: tach bench and profile measure "
              "those");
}

namespace model {

namespace {

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
    info_.max_seq_length = config_.max_seq_length;
    if (info_.max_positions > 0 && (info_.max_seq_length == 0 || info_.max_seq_length > info_.max_positions))
      info_.max_seq_length = info_.max_positions;  // sentence-transformers caps it the same way
    info_.lowercase_input = config_.do_lower_case;
    info_.prompts = config_.prompts;
    info_.default_prompt_name = config_.default_prompt_name;
    info_.notes.push_back("sentence embeddings: " + info_.pooling + " pooling" +
                          (config_.normalize ? ", L2-normalised" : "") + " (" + config_.source + ")");
  }

  const ModelInfo& info() const override { return info_; }
  Tensor hidden_states(const TokenBatch& batch) const override { return inner_->hidden_states(batch); }
  Tensor classify(const TokenBatch& batch) const override { return inner_->classify(batch); }
  Tensor lm_logits(const TokenBatch& batch) const override { return inner_->lm_logits(batch); }
  Tensor prefill_logits(const TokenBatch& batch) const override { return inner_->prefill_logits(batch); }
  Generation generate(const TokenBatch& prompts, const GenerateOptions& options) const override {
    return inner_->generate(prompts, options);
  }

  Tensor embed(const TokenBatch& batch) const override {
    Tensor h = inner_->hidden_states(batch);  // [B, T, C]
    core::Span span(core::SpanKind::module, "pooler");
    Tensor out = Tensor::empty({batch.batch(), info_.embedding_dim}, DType::f32);
    ops::pooling_forward(out, h, batch.attention_mask, config_.modes);
    if (config_.normalize) ops::l2_normalize_forward(out);
    return out;
  }

  ForwardCost forward_cost(int64_t B, int64_t T) const override {
    ForwardCost c = inner_->forward_cost(B, T);
    if (info_.classifier) return c;  // measured_forward runs the head, not the pooling
    ops::OpCost p = ops::pooling_cost(B, T, info_.hidden_size, config_.modes.size());
    if (config_.normalize) p += ops::l2_normalize_cost(B, info_.embedding_dim);
    c.flops += p.flops;
    c.bytes += p.bytes();
    return c;
  }

 private:
  std::unique_ptr<Model> inner_;
  SentenceEmbeddingConfig config_;
  ModelInfo info_;
};

}  // namespace

std::unique_ptr<Model> with_sentence_embedding(std::unique_ptr<Model> inner, const SentenceEmbeddingConfig& config) {
  return std::make_unique<SentenceEmbedder>(std::move(inner), config);
}

}  // namespace model

}  // namespace tach
