// --by importance's calibration: the model's own head set up for training, every weight frozen,
// and the first examples of -d read and tokenized as tach train reads its training data for that
// head (train/run_data.cc), so that the loss the units are scored by is the one training lowers:
//   sequence classification  rows of text (and label), the loss as config.json's problem_type says
//   token classification     CoNLL or JSON tagged words, the labels aligned to the first sub-token
//   question answering       SQuAD-format questions, each context cut into windows of -s tokens
//                            overlapping by --doc-stride (a long context gives several rows)
//   masked LM                the text column, 15% of the tokens chosen and masked as tach train's
//                            first epoch masks them with its default seed (kMaskSeed)
//   causal LM                the text column (…ForCausalLM checkpoints of the families with a
//                            token classifier: Llama, Mistral, Qwen2, Qwen3), each token labelled
//                            by the next one
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tach/error.h"
#include "tach/model.h"
#include "tach/prune.h"
#include "train/train_data.h"
#include "train/trainable_model.h"
#include "train/training_model.h"

namespace tach::prune {

// The masked LM's masks: tach train's default --seed, in its first epoch (epoch 0), so that the
// scores are reproducible and equal to a run's first-epoch masks.
constexpr uint64_t kMaskSeed = 42;

struct CalibrationSet {
  Head head = Head::none;  // the loss taken: a causal LM's is a token classifier's (calibration.cc)
  std::string head_label;  // prune_scores.json's name for it: head_name(head), or "causal-lm"
  std::unique_ptr<train::TrainableModel> model;  // f32 masters, every parameter frozen (no weight gradient)
  train::TrainData data;                         // one row per example (question answering: per window)
  std::string problem_type;                      // a sequence classifier's loss; empty for the other heads
  std::string split;                             // a JSON split file's or a Hub dataset's, else empty
  int64_t examples = 0;                          // examples read: the first --calibration-samples
  int64_t max_length = 0, doc_stride = 0;        // as used (the model's positions cap -s)
};

// Calibration data the head cannot read: another task's file, a missing label column, a malformed
// or empty file (naming the file, what it is and what the head reads). An input error, exit status
// 1 as every command's data errors (docs/cli.md); its own type so that tach shrink, which makes
// other prune refusals its usage errors, keeps it one.
class CalibrationDataError : public Error {
 public:
  explicit CalibrationDataError(const std::string& message) : Error(message) {}
};

// src: the opened checkpoint (its head names the loss). Throws CalibrationDataError for calibration
// data the head cannot read and Error for a model without a head.
CalibrationSet calibration_set(const PruneOptions& options, train::TrainingModelSource src);

}  // namespace tach::prune
