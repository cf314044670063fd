#include "train/head_loss.h"

#include <algorithm>
#include <vector>

#include "tach/error.h"
#include "train/loss.h"

namespace tach::train {

namespace {

// Cross-entropy over rows of logits [R, L] with labels in [0, L) or -100.
double token_cross_entropy(const float* logits, const std::vector<int32_t>& labels, int64_t R, int64_t L,
                           float* dlogits, float scale, const char* what) {
  check(int64_t(labels.size()) == R,
        std::string(what) + ": " + std::to_string(labels.size()) + " labels for " + std::to_string(R) + " tokens");
  for (const int32_t l : labels)
    check(l == kIgnoreIndex || (l >= 0 && l < L),
          std::string(what) + ": label " + std::to_string(l) + " is outside the head's " + std::to_string(L));
  std::vector<float> probs(size_t(R * L));
  const double loss = cross_entropy_forward(probs.data(), logits, labels.data(), R, L);
  if (dlogits) cross_entropy_backward(dlogits, probs.data(), labels.data(), R, L, scale);
  return loss;
}

// One of question answering's two losses: logits column `column` of [B, T, 2] against positions [B].
double position_loss(const float* logits, const std::vector<int32_t>& positions, int64_t B, int64_t T, int column,
                     float* dlogits, float scale) {
  std::vector<float> column_logits(size_t(B * T)), d(size_t(B * T), 0.f);
  for (int64_t i = 0; i < B * T; ++i) column_logits[size_t(i)] = logits[i * 2 + column];
  // transformers clamps the positions to [0, T] and ignores T (a position outside the window).
  std::vector<int32_t> targets;
  for (const int32_t p : positions) {
    const int32_t clamped = std::clamp<int32_t>(p, 0, int32_t(T));
    targets.push_back(clamped == T ? kIgnoreIndex : clamped);
  }
  std::vector<float> probs(size_t(B * T));
  const double loss = cross_entropy_forward(probs.data(), column_logits.data(), targets.data(), B, T);
  if (dlogits) {
    cross_entropy_backward(d.data(), probs.data(), targets.data(), B, T, scale);
    for (int64_t i = 0; i < B * T; ++i) dlogits[i * 2 + column] += d[size_t(i)];
  }
  return loss;
}

}  // namespace

std::vector<int32_t> labelled_rows(const Targets& t) {
  std::vector<int32_t> rows;
  for (size_t i = 0; i < t.token_labels.size(); ++i)
    if (t.token_labels[i] != kIgnoreIndex) rows.push_back(int32_t(i));
  return rows;
}

double head_loss(Head head, const std::string& problem_type, const float* logits, int64_t B, int64_t T, int64_t L,
                 const Targets& t, float* dlogits, float scale, const std::vector<int32_t>* rows) {
  switch (head) {
    case Head::token_classification:
      return token_cross_entropy(logits, t.token_labels, B * T, L, dlogits, scale, "token classification");
    case Head::masked_lm: {
      if (!rows || rows->empty())
        return token_cross_entropy(logits, t.token_labels, B * T, L, dlogits, scale, "masked LM");
      std::vector<int32_t> labels;
      for (const int32_t r : *rows) labels.push_back(t.token_labels.at(size_t(r)));
      return token_cross_entropy(logits, labels, int64_t(labels.size()), L, dlogits, scale, "masked LM");
    }
    case Head::question_answering: {
      check(L == 2, "question answering needs a head of 2 outputs (start, end), this one has " + std::to_string(L));
      check(int64_t(t.start_positions.size()) == B && int64_t(t.end_positions.size()) == B,
            "question answering: " + std::to_string(t.start_positions.size()) + " answer positions for " +
                std::to_string(B) + " rows");
      return (position_loss(logits, t.start_positions, B, T, 0, dlogits, scale / 2) +
              position_loss(logits, t.end_positions, B, T, 1, dlogits, scale / 2)) /
             2;
    }
    default: return classifier_loss(problem_type, logits, B, L, t, dlogits, scale);
  }
}

}  // namespace tach::train
