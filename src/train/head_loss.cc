#include "train/head_loss.h"

#include "ops/cross_entropy.h"
#include "tach/error.h"

namespace tach::train {

namespace {

// Cross-entropy over rows of logits [R, L] with labels [R] in [0, L) or -100.
QueuedLoss token_cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& dlogits, float scale,
                               const char* what) {
  const int64_t R = logits.size(0), L = logits.size(1);
  check(labels.defined() && labels.numel() == R, std::string(what) + ": " +
                                                     std::to_string(labels.defined() ? labels.numel() : 0) +
                                                     " labels for " + std::to_string(R) + " tokens");
  const Tensor probs = Tensor::empty({R, L}, DType::f32, logits.device(), MemoryCategory::activations);
  const QueuedLoss loss = queue_cross_entropy(probs, logits, labels);
  if (dlogits.defined()) ops::cross_entropy_backward(dlogits, probs, labels, scale);
  return loss;
}

}  // namespace

std::vector<int32_t> labelled_rows(const Targets& t) {
  std::vector<int32_t> rows;
  for (size_t i = 0; i < t.token_labels.size(); ++i)
    if (t.token_labels[i] != ops::kIgnoreIndex) rows.push_back(int32_t(i));
  return rows;
}

double head_loss(Head head, const std::string& problem_type, const Tensor& logits, const LossTargets& t,
                 const Tensor& dlogits, float scale) {
  return queue_head_loss(head, problem_type, logits, t, dlogits, scale).read();
}

QueuedLoss queue_head_loss(Head head, const std::string& problem_type, const Tensor& logits, const LossTargets& t,
                           const Tensor& dlogits, float scale) {
  switch (head) {
    case Head::token_classification:
      return token_cross_entropy(logits, t.token_labels, dlogits, scale, "token classification");
    case Head::masked_lm: return token_cross_entropy(logits, t.token_labels, dlogits, scale, "masked LM");
    case Head::question_answering: {
      const int64_t L = logits.size(1);
      check(L == 2, "question answering needs a head of 2 outputs (start, end), this one has " + std::to_string(L));
      const int64_t starts = t.start_positions.defined() ? t.start_positions.numel() : 0;
      const int64_t ends = t.end_positions.defined() ? t.end_positions.numel() : 0;
      check(starts > 0 && starts == ends && logits.size(0) % starts == 0,
            "question answering: " + std::to_string(starts) + " start and " + std::to_string(ends) +
                " end positions for " + std::to_string(logits.size(0)) + " tokens");
      const int64_t B = starts, T = logits.size(0) / B;
      const Tensor probs = Tensor::empty({2, B, T}, DType::f32, logits.device(), MemoryCategory::activations);
      const QueuedLoss loss = queue_span_cross_entropy(probs, logits, t.start_positions, t.end_positions);
      if (dlogits.defined())
        ops::span_cross_entropy_backward(dlogits, probs, t.start_positions, t.end_positions, scale);
      return loss;
    }
    default: return queue_classifier_loss(problem_type, logits, t, dlogits, scale);
  }
}

}  // namespace tach::train
