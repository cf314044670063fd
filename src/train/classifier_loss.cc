#include "train/classifier_loss.h"

#include "tach/error.h"
#include "train/loss.h"

namespace tach::train {

double classifier_loss(const std::string& problem_type, const float* logits, int64_t B, int64_t L, const Targets& t,
                       float* dlogits, float scale) {
  if (problem_type == "regression") {
    check(L == 1, "regression needs a head with one output, this one has " + std::to_string(L));
    check(int64_t(t.values.size()) == B,
          "regression: " + std::to_string(t.values.size()) + " targets for " + std::to_string(B) + " rows");
    const double loss = mse_forward(logits, t.values.data(), B);
    if (dlogits) mse_backward(dlogits, logits, t.values.data(), B, scale);
    return loss;
  }
  if (problem_type == "multi_label_classification") {
    check(int64_t(t.values.size()) == B * L, "multi-label: " + std::to_string(t.values.size()) + " targets for " +
                                                 std::to_string(B) + " rows of " + std::to_string(L) + " labels");
    const double loss = bce_with_logits_forward(logits, t.values.data(), B * L);
    if (dlogits) bce_with_logits_backward(dlogits, logits, t.values.data(), B * L, scale);
    return loss;
  }
  check(problem_type == "single_label_classification" || problem_type.empty(),
        "problem_type \"" + problem_type +
            "\" is not one transformers knows (single_label_classification, multi_label_classification, regression)");
  check(int64_t(t.classes.size()) == B,
        "classification: " + std::to_string(t.classes.size()) + " labels for " + std::to_string(B) + " rows");
  std::vector<float> probs(size_t(B * L));
  const double loss = cross_entropy_forward(probs.data(), logits, t.classes.data(), B, L);
  if (dlogits) cross_entropy_backward(dlogits, probs.data(), t.classes.data(), B, L, scale);
  return loss;
}

}  // namespace tach::train
