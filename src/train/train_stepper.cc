// TrainStepper: one training step per call, on the same pieces as tach train's loop.
#include <cmath>

#include "tach/error.h"
#include "tach/train.h"
#include "train/train_step.h"
#include "train/training_model.h"

namespace tach {

namespace {

class Stepper final : public TrainStepper {
 public:
  explicit Stepper(const Options& o)
      : options_(o),
        source_(train::open_training_model(o.model, o.seed)),
        model_(build(source_, o.seed)),
        optimizer_(model_.params, adam(o), train::DecayScope::trainer, o.fused) {
    source_.store.reset();
    acts_.fused = o.fused;
    check(model_.num_labels() >= 2, o.model + ": a training step needs a classification head with labels; this one "
                                              "is a regression head");
    problem_type_ = source_.config.problem_type.empty() ? "single_label_classification" : source_.config.problem_type;
  }

  double step(const TokenBatch& batch, const std::vector<int32_t>& labels) override {
    check(int64_t(labels.size()) == batch.batch(), "train step: " + std::to_string(labels.size()) + " labels for " +
                                                       std::to_string(batch.batch()) + " rows");
    train::Targets targets;
    targets.classes = labels;
    train::DropoutRates r;
    if (options_.dropout) {
      r.hidden = model_.config.hidden_dropout;
      r.attention = model_.config.attention_dropout;
      r.classifier = model_.config.classifier_dropout;
    }
    r.seed = options_.seed;
    r.micro_batch = steps_;
    model_.params.zero_grad();
    const double loss =
        train::forward_backward(model_, acts_, batch, targets, problem_type_, r, 1.0f, nullptr);
    train::clip_and_update(model_.params, optimizer_, options_.lr, options_.max_grad_norm);
    ++steps_;
    return loss;
  }
  int64_t vocab_size() const override { return model_.config.vocab_size; }
  int64_t num_labels() const override { return model_.num_labels(); }
  int32_t pad_token_id() const override { return int32_t(model_.config.pad_token_id); }
  int64_t parameters() const override { return model_.params.count(false); }
  std::string architecture() const override {
    return model_.bert() ? "BertForSequenceClassification" : "DistilBertForSequenceClassification";
  }

 private:
  static train::TrainableEncoder build(train::TrainingModelSource& s, uint64_t seed) {
    model::EncoderConfig c = s.config;
    if (c.id2label.empty()) c.id2label = {"LABEL_0", "LABEL_1"};  // a bare encoder: transformers' default head
    return train::build_trainable_encoder(c, *s.binder, seed, nullptr);
  }
  static train::AdamWConfig adam(const Options& o) {
    train::AdamWConfig a;
    a.weight_decay = float(o.weight_decay);
    return a;
  }

  Options options_;
  train::TrainingModelSource source_;
  train::TrainableEncoder model_;
  train::AdamWOptimizer optimizer_;
  train::EncoderActivations acts_;
  std::string problem_type_;
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<TrainStepper> TrainStepper::create(const Options& options) {
  check(std::isfinite(options.lr) && options.lr > 0, "train step: the learning rate must be a positive number");
  return std::make_unique<Stepper>(options);
}

}  // namespace tach
