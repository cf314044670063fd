// A micro-batch's targets, as the data loaders fill them (Targets, on the host) and as the loss
// ops read them (LossTargets, Tensors on the model's device, copied once in the step's data
// phase), and the loss of a sequence classifier as transformers picks it from problem_type:
//   single_label_classification  cross-entropy over the labels (mean over rows; label -100 ignored)
//   regression                   mean squared error (num_labels 1: logits squeezed to [B])
//   multi_label_classification   binary cross-entropy with logits (mean over every element)
// The losses are ops (ops/cross_entropy.h, ops/elementwise_loss.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/tensor.h"

namespace tach::train {

// single_label_classification: classes [B] in [0, L) (or -100, ignored).
// regression: values [B] (L must be 1).  multi_label_classification: values [B * L], 0/1 or soft.
// Per-token heads: token_labels [B * T] (masked LM: the original ids of the chosen tokens;
// token classification: label ids), -100 where no loss is taken. Question answering:
// start_positions, end_positions [B], token indices of the answer (the first token: none in the window).
struct Targets {
  std::vector<int32_t> classes;
  std::vector<float> values;
  std::vector<int32_t> token_labels;
  std::vector<int32_t> start_positions, end_positions;
};

// Targets on the device, with transformers' rules applied; a field the head does not read is
// undefined.
struct LossTargets {
  Tensor classes;                         // [B] i32
  Tensor values;                          // [B] or [B * L] f32
  Tensor token_labels;                    // [R] i32: a token classifier's R = B * T; the masked LM's predicted rows
                                          // (the head ran on those alone), or all B * T
  Tensor start_positions, end_positions;  // [B] i32, clamped to [0, T], T (outside the window) as -100
};

// Copies what `head` reads of `targets` to `device`; T is the batch's row length (question
// answering's clamp); rows: the masked LM's predicted rows (ForwardState::predicted_rows), whose
// labels alone are kept (null or empty: every token's). Sizes are checked against the logits by
// the loss.
LossTargets loss_targets(const Targets& targets, Head head, int64_t T, Device device,
                         const std::vector<int32_t>* rows = nullptr);

// A loss as a step reads it: on the CPU its value, there at once; on a GPU left on the device (the
// loss op's f64 slots) until read() copies it back, so that a step's forward, backward and update
// queue on the GPU with one read-back, after them.
struct QueuedLoss {
  double value = 0;            // the CPU's
  Tensor slots;                // a GPU's: f64 [ops::kLossSlots] (cross-entropy) or [1] (MSE, BCE)
  bool cross_entropy = false;  // slots are cross-entropy's (a bad label is said when read)
  double read() const;
};

// logits: [B, L]. Returns the mean loss; dlogits [B, L] += scale * d loss / d logits (undefined:
// the loss only).
double classifier_loss(const std::string& problem_type, const Tensor& logits, const LossTargets& targets,
                       const Tensor& dlogits, float scale);
// The same, the loss left where the logits are.
QueuedLoss queue_classifier_loss(const std::string& problem_type, const Tensor& logits, const LossTargets& targets,
                                 const Tensor& dlogits, float scale);

// The loss forwards on the logits' device (shapes as the ops take them), queued: on the CPU each
// returns its value at once.
QueuedLoss queue_cross_entropy(const Tensor& probs, const Tensor& logits, const Tensor& labels);
QueuedLoss queue_span_cross_entropy(const Tensor& probs, const Tensor& logits, const Tensor& start, const Tensor& end);

}  // namespace tach::train
