// Knowledge distillation (tach train --distill-from TEACHER): a trained model of any family, run
// for inference only on the student's token ids, teaches through the soft-target loss of Hinton,
// Vinyals and Dean (2015), mixed with the task's own loss:
//   loss = alpha · T² · KL(softmax(teacher / T) || softmax(student / T)) + (1 - alpha) · task loss
// alpha weighs the teacher's term, as the paper's soft-target weight and transformers' research
// distiller (--alpha_ce) do; the Trainer-based distillation examples (a DistillationTrainer's
// alpha) weigh the task loss instead: their alpha a is this alpha 1 - a. The KL runs per head as
// the task loss does (ops/kl_distill.h):
//   sequence classification  one distribution per row over the labels
//   token classification     one per token over the labels, tokens labelled -100 left out
//   question answering       the start and the end logits each over the row's tokens (2B groups)
//   masked LM                one per predicted token over the vocabulary
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tach/model.h"
#include "train/classifier_loss.h"

namespace tach::train {

// --distill-temperature's and --distill-alpha's defaults: T 2 (the middle of the 1-4 range the
// distillation literature uses for classifiers) and an even mix.
inline constexpr double kDefaultDistillTemperature = 2.0;
inline constexpr double kDefaultDistillAlpha = 0.5;

// What the student is, as the teacher must match it: the head that trains, its labels (empty: the
// masked LM's and question answering's), and the vocabulary its token ids come from.
struct StudentShape {
  std::string model;  // as the user named it, for messages
  Head head = Head::sequence_classification;
  std::vector<std::string> labels;
  std::string problem_type;
  int64_t vocab_size = 0;
  // The tokenizer the student's ids come from (a file or directory; empty: none to compare). Where
  // the teacher's directory ships one too, the two vocabularies must be the same token for every id.
  std::string tokenizer;
};

// The teacher, loaded for inference (encoder_model / decoder_model) on the student's device.
class DistillTeacher {
 public:
  // spec: any model tach loads; dtype: an inference compute dtype (f32, bf16, f16, int8, nf4).
  // Refused, naming what differs: a teacher without the student's head as trained (a head it
  // would have to make new knows nothing), other labels, or another vocabulary (its size, and where
  // both have a tokenizer, the token of every id); a regression or
  // multi-label student (no softmax over its outputs to soften).
  DistillTeacher(const std::string& spec, const std::string& dtype, double temperature, double alpha,
                 const StudentShape& student, Device device);

  // The teacher's logits for `batch` (on the host, as the collator made it), laid out as the
  // student's (TrainableModel's state.logits): [B, L], [B * T, L], [B * T, 2], or the masked
  // LM's [rows, V] at predicted_rows (empty: every token). On the student's device.
  Tensor logits(const TokenBatch& batch, const std::vector<int32_t>& predicted_rows) const;

  // The distillation term on the student's logits, its gradient scaled by alpha · scale added to
  // dstudent (undefined: the loss only). Returns T² · KL (unweighted), left on the device.
  QueuedLoss queue_loss(const Tensor& student, const Tensor& teacher, const LossTargets& targets,
                        const Tensor& dstudent, float scale) const;

  float temperature() const { return temperature_; }
  float alpha() const { return alpha_; }
  const ModelInfo& info() const { return model_->info(); }

 private:
  std::unique_ptr<Model> model_;
  Head head_;
  Device device_;
  float temperature_, alpha_;
};

// --distill-temperature and --distill-alpha checked: a finite T > 0, alpha in [0, 1].
void validate_distill_settings(double temperature, double alpha);

}  // namespace tach::train
