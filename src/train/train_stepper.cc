// TrainStepper: one training step per call, on the same pieces as tach train's loop.
#include <cmath>

#include "tach/error.h"
#include "tach/train.h"
#include "train/training_method.h"
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
        teacher_(open_teacher(source_, o)),
        step_(*model_, settings(source_, o, teacher_.get())) {
    source_.store.reset();
    check(o.head != Head::sequence_classification || model_->num_labels() >= 2,
          o.model +
              ": a training step needs a classification head with labels; this one "
              "is a regression head");
  }

  double step(const TokenBatch& batch, const std::vector<int32_t>& labels) override {
    const Head head = options_.head;
    const int64_t want = head == Head::sequence_classification ? batch.batch()
                         : head == Head::question_answering    ? 2 * batch.batch()
                                                               : batch.batch() * batch.seq_len();
    check(int64_t(labels.size()) == want,
          "train step: " + std::to_string(labels.size()) + " labels for " + std::to_string(batch.batch()) +
              " rows of " + std::to_string(batch.seq_len()) + " tokens; this head takes " + std::to_string(want));
    const train::StepOutcome out = step_.run(
        steps_, 1,
        [&](int64_t, TokenBatch* b, train::Targets* t) {
          *b = batch;
          if (head == Head::sequence_classification) {
            t->classes = labels;
          } else if (head == Head::question_answering) {
            for (size_t r = 0; r + 1 < labels.size(); r += 2) {
              t->start_positions.push_back(labels[r]);
              t->end_positions.push_back(labels[r + 1]);
            }
          } else {
            t->token_labels = labels;
          }
        },
        options_.lr);
    ++steps_;
    return out.loss;
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
    return {train::bf16_training_note(options_.device)};
  }

 private:
  // The head's labels: the checkpoint's, or a new head's (transformers' default two).
  static std::vector<std::string> head_labels(const train::TrainingModelSource& s, const Options& o) {
    std::vector<std::string> labels = s.id2label();
    if (labels.empty()) labels = {"LABEL_0", "LABEL_1"};  // a bare encoder: transformers' default head
    if (o.head != Head::sequence_classification &&
        (o.head != Head::token_classification || !s.has_head(Head::token_classification)))
      labels = {"LABEL_0", "LABEL_1"};  // a new per-token head: transformers' default two labels
    return labels;
  }
  // The model, with its LoRA adapters before the optimizer sees the parameter table.
  static std::unique_ptr<train::TrainableModel> build(train::TrainingModelSource& s, const Options& o) {
    const std::vector<std::string> labels = head_labels(s, o);
    auto m = train::build_trainable_model(s, labels, o.head == Head::sequence_classification ? s.problem_type() : "",
                                          o.seed, nullptr, o.head, o.device);
    train::MethodOptions mo;
    mo.method = o.qlora ? "qlora" : o.lora ? "lora" : "full";
    mo.lora.r = o.lora_r;
    mo.lora.alpha = float(o.lora_alpha);
    (void)train::apply_training_method(*m, *s.family, mo, o.seed);
    return m;
  }
  // --distill-from's teacher, checked against this student (null without one).
  static std::unique_ptr<train::DistillTeacher> open_teacher(const train::TrainingModelSource& s, const Options& o) {
    if (o.distill_from.empty()) return nullptr;
    train::StudentShape student;
    student.model = o.model;
    student.head = o.head;
    if (o.head == Head::sequence_classification || o.head == Head::token_classification)
      student.labels = head_labels(s, o);
    student.problem_type = o.head == Head::sequence_classification ? s.problem_type() : "";
    student.vocab_size = s.is_decoder() ? s.decoder.vocab_size : s.config.vocab_size;
    student.tokenizer = s.location.dir;  // compared where both directories ship a tokenizer
    return std::make_unique<train::DistillTeacher>(o.distill_from, o.distill_dtype, o.distill_temperature,
                                                   o.distill_alpha, student, o.device);
  }
  static train::StepSettings settings(const train::TrainingModelSource& s, const Options& o,
                                      const train::DistillTeacher* teacher) {
    train::StepSettings st;
    st.teacher = teacher;
    st.fused = o.fused;
    st.gradient_checkpointing = o.gradient_checkpointing;
    st.dropout = o.dropout ? s.dropout(o.head) : train::DropoutRates{};
    st.dropout.seed = o.seed;
    st.adam.weight_decay = float(o.weight_decay);
    st.max_grad_norm = o.max_grad_norm;
    st.problem_type = s.problem_type().empty() ? "single_label_classification" : s.problem_type();
    st.precision = o.bf16 ? DType::bf16 : DType::f32;
    return st;
  }

  Options options_;
  train::TrainingModelSource source_;
  std::unique_ptr<train::TrainableModel> model_;
  std::unique_ptr<train::DistillTeacher> teacher_;  // declared before step_, which reads it
  train::TrainingStep step_;
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<TrainStepper> TrainStepper::create(const Options& options) {
  check(std::isfinite(options.lr) && options.lr > 0, "train step: the learning rate must be a positive number");
  return std::make_unique<Stepper>(options);
}

}  // namespace tach
