// The loss of a sequence classifier as transformers picks it from problem_type (train/loss.h
// holds the three losses), with targets checked against the head.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// Returns the mean loss; dlogits [B, L] += scale * d loss / d logits (pass null to skip).
double classifier_loss(const std::string& problem_type, const float* logits, int64_t B, int64_t L,
                       const Targets& targets, float* dlogits, float scale);

}  // namespace tach::train
