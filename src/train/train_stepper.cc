// TrainStepper: one training step per call, on the same pieces as tach train's loop.
#include <cmath>

#include "cpu/train_gemm.h"
#include "tach/error.h"
#include "tach/train.h"
#include "train/lora.h"
#include "train/train_step.h"
#include "train/training_model.h"

namespace tach {

namespace {

class Stepper final : public TrainStepper {
 public:
  explicit Stepper(const Options& o)
      : options_(o),
        source_(train::open_training_model(o.model, o.seed)),
        model_(build(source_, o)),
        optimizer_(model_->params, adam(o), train::DecayScope::trainer, o.fused),
        state_(model_->new_state(o.fused)) {
    state_->checkpoint = o.gradient_checkpointing;
    source_.store.reset();
    check(model_->num_labels() >= 2, o.model + ": a training step needs a classification head with labels; this one "
                                               "is a regression head");
    problem_type_ = source_.problem_type().empty() ? "single_label_classification" : source_.problem_type();
  }

  double step(const TokenBatch& batch, const std::vector<int32_t>& labels) override {
    check(int64_t(labels.size()) == batch.batch(), "train step: " + std::to_string(labels.size()) + " labels for " +
                                                       std::to_string(batch.batch()) + " rows");
    train::Targets targets;
    targets.classes = labels;
    train::DropoutRates r = options_.dropout ? source_.dropout() : train::DropoutRates{};
    r.seed = options_.seed;
    r.micro_batch = steps_;
    const cpu::TrainPrecisionScope precision(options_.bf16 ? cpu::TrainPrecision::bf16 : cpu::TrainPrecision::f32);
    model_->params.zero_grad();
    const double loss = train::forward_backward(*model_, *state_, batch, targets, problem_type_, r, 1.0f, nullptr);
    train::clip_and_update(model_->params, optimizer_, options_.lr, options_.max_grad_norm);
    ++steps_;
    return loss;
  }
  int64_t vocab_size() const override {
    return source_.is_decoder() ? source_.decoder.vocab_size : source_.config.vocab_size;
  }
  int64_t num_labels() const override { return model_->num_labels(); }
  int32_t pad_token_id() const override { return int32_t(std::max<int64_t>(0, source_.pad_token_id())); }
  int64_t parameters() const override { return model_->params.count(false); }
  std::string architecture() const override { return model_->architecture(); }
  std::vector<std::string> notes() const override {
    if (!options_.bf16) return {};
    return {train::bf16_training_note()};
  }

 private:
  // The model, with its LoRA adapters before the optimizer sees the parameter table.
  static std::unique_ptr<train::TrainableModel> build(train::TrainingModelSource& s, const Options& o) {
    std::vector<std::string> labels = s.id2label();
    if (labels.empty()) labels = {"LABEL_0", "LABEL_1"};  // a bare encoder: transformers' default head
    auto m = train::build_trainable_model(s, labels, s.problem_type(), o.seed, nullptr);
    if (o.lora || o.qlora) {
      train::LoraOptions lo;
      lo.r = o.lora_r;
      lo.alpha = float(o.lora_alpha);
      lo.target_modules = train::default_lora_targets(*s.family);
      lo.modules_to_save = train::default_modules_to_save(*s.family);
      train::attach_lora(*m, lo, o.seed);
      if (o.qlora) m->quantize_base_nf4();
    }
    return m;
  }
  static train::AdamWConfig adam(const Options& o) {
    train::AdamWConfig a;
    a.weight_decay = float(o.weight_decay);
    return a;
  }

  Options options_;
  train::TrainingModelSource source_;
  std::unique_ptr<train::TrainableModel> model_;
  train::AdamWOptimizer optimizer_;
  std::unique_ptr<train::ForwardState> state_;
  std::string problem_type_;
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<TrainStepper> TrainStepper::create(const Options& options) {
  check(std::isfinite(options.lr) && options.lr > 0, "train step: the learning rate must be a positive number");
  return std::make_unique<Stepper>(options);
}

}  // namespace tach
