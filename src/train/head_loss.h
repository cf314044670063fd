// The loss of the head that trains, as transformers' task models compute it from their labels:
//   sequence classification  classifier_loss (problem_type picks cross-entropy, MSE or BCE)
//   token classification     cross-entropy over every token's labels, -100 ignored
//   masked LM                cross-entropy over the vocabulary at the chosen tokens (-100 elsewhere)
//   question answering       (CE(start logits, start) + CE(end logits, end)) / 2 over the rows, the
//                            positions clamped to [0, T] and T ignored (…ForQuestionAnswering)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/model.h"
#include "train/classifier_loss.h"

namespace tach::train {

// logits: [B, L], or [B * T, L] for a per-token head (question answering L = 2: start, end), or
// for the masked LM given its predicted rows, [rows, V] (ForwardState::predicted_rows).
// targets: loss_targets(…, head, T, logits' device). Returns the mean loss; dlogits (the logits'
// shape) += scale * d loss / d logits (undefined: the loss only).
double head_loss(Head head, const std::string& problem_type, const Tensor& logits, const LossTargets& targets,
                 const Tensor& dlogits, float scale);
// The same, the loss left where the logits are (QueuedLoss): a GPU step reads it once, at its end.
QueuedLoss queue_head_loss(Head head, const std::string& problem_type, const Tensor& logits, const LossTargets& targets,
                           const Tensor& dlogits, float scale);

// The masked LM's rows that reach the loss: the tokens (b * T + t) with a label.
std::vector<int32_t> labelled_rows(const Targets& targets);

}  // namespace tach::train
