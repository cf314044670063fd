// Evaluation during training: the model's forward with dropout off (transformers' eval
// mode) over a prepared dataset, with the mean loss and, for classification, accuracy and macro-F1.
#pragma once

#include <string>

#include "train/data_parallel.h"
#include "train/train_data.h"
#include "train/trainable_model.h"

namespace tach::train {

struct EvalScores {
  int64_t examples = 0;
  double loss = 0;
  // Single-label: accuracy and macro-F1 over classes. Multi-label: exact-match (subset) accuracy
  // and macro-F1 over labels, a label predicted where its logit is above 0 (sigmoid above 0.5).
  // -1 for regression. Token classification: accuracy over the labelled tokens (macro-F1 -1).
  double accuracy = -1, macro_f1 = -1;
  double perplexity = -1;  // masked LM: exp(loss), as run_mlm.py reports it
  double seconds = 0;
};

// Data-parallel (dp not null): each rank runs every size-th example and the logits and losses are
// summed over the ranks, so every rank gets the scores of the whole set. precision: the GEMMs'
// inputs, as the run's steps take them (StepSettings::precision), as transformers' Trainer
// evaluates under the autocast it trains with.
EvalScores evaluate_trainable(const TrainableModel& model, const TrainData& data, int64_t batch_size,
                              const std::string& problem_type, DataParallel* dp, DType precision);

}  // namespace tach::train
