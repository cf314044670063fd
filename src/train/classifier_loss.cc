#include "train/classifier_loss.h"

#include <algorithm>

#include "ops/cross_entropy.h"
#include "ops/elementwise_loss.h"
#include "tach/error.h"

namespace tach::train {

namespace {

// A host vector as a [n] tensor on `device` (undefined when empty: the head does not read it).
template <typename T>
Tensor on_device(const std::vector<T>& v, DType dtype, Device device) {
  if (v.empty()) return Tensor();
  const Tensor host = Tensor::from_borrowed(const_cast<T*>(v.data()), {int64_t(v.size())}, dtype, nullptr);
  return host.to_device(device, MemoryCategory::activations);
}

std::string count_of(const Tensor& t) { return std::to_string(t.defined() ? t.numel() : 0); }

}  // namespace

LossTargets loss_targets(const Targets& t, Head head, int64_t T, Device device, const std::vector<int32_t>* rows) {
  LossTargets out;
  out.classes = on_device(t.classes, DType::i32, device);
  out.values = on_device(t.values, DType::f32, device);
  if (head == Head::masked_lm && rows && !rows->empty()) {
    // The head ran on these tokens alone: their labels, in the rows' order.
    std::vector<int32_t> labels;
    for (const int32_t r : *rows) labels.push_back(t.token_labels.at(size_t(r)));
    out.token_labels = on_device(labels, DType::i32, device);
  } else {
    out.token_labels = on_device(t.token_labels, DType::i32, device);
  }
  if (head == Head::question_answering) {
    // transformers clamps the positions to [0, T] and ignores T (a position outside the window).
    auto clamped = [T](const std::vector<int32_t>& positions) {
      std::vector<int32_t> kept;
      for (const int32_t p : positions) {
        const int32_t c = std::clamp<int32_t>(p, 0, int32_t(T));
        kept.push_back(c == T ? ops::kIgnoreIndex : c);
      }
      return kept;
    };
    out.start_positions = on_device(clamped(t.start_positions), DType::i32, device);
    out.end_positions = on_device(clamped(t.end_positions), DType::i32, device);
  }
  return out;
}

double classifier_loss(const std::string& problem_type, const Tensor& logits, const LossTargets& t,
                       const Tensor& dlogits, float scale) {
  const int64_t B = logits.size(0), L = logits.size(1);
  if (problem_type == "regression") {
    check(L == 1, "regression needs a head with one output, this one has " + std::to_string(L));
    check(t.values.defined() && t.values.numel() == B,
          "regression: " + count_of(t.values) + " targets for " + std::to_string(B) + " rows");
    const double loss = ops::mse_forward(logits, t.values);
    if (dlogits.defined()) ops::mse_backward(dlogits, logits, t.values, scale);
    return loss;
  }
  if (problem_type == "multi_label_classification") {
    check(t.values.defined() && t.values.numel() == B * L, "multi-label: " + count_of(t.values) + " targets for " +
                                                               std::to_string(B) + " rows of " + std::to_string(L) +
                                                               " labels");
    const double loss = ops::bce_with_logits_forward(logits, t.values);
    if (dlogits.defined()) ops::bce_with_logits_backward(dlogits, logits, t.values, scale);
    return loss;
  }
  check(problem_type == "single_label_classification" || problem_type.empty(),
        "problem_type \"" + problem_type +
            "\" is not one transformers knows (single_label_classification, multi_label_classification, regression)");
  check(t.classes.defined() && t.classes.numel() == B,
        "classification: " + count_of(t.classes) + " labels for " + std::to_string(B) + " rows");
  const Tensor probs = Tensor::empty({B, L}, DType::f32, logits.device(), MemoryCategory::activations);
  const double loss = ops::cross_entropy_forward(probs, logits, t.classes);
  if (dlogits.defined()) ops::cross_entropy_backward(dlogits, probs, t.classes, scale);
  return loss;
}

}  // namespace tach::train
