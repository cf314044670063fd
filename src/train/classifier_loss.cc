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

namespace {

bool on_host(const Tensor& t) { return t.device().kind == DeviceKind::cpu; }

QueuedLoss queued_on(const Tensor& logits, int64_t slots, bool cross_entropy) {
  QueuedLoss l;
  l.slots = Tensor::empty({slots}, DType::f64, logits.device(), MemoryCategory::workspace);
  l.cross_entropy = cross_entropy;
  return l;
}

}  // namespace

double QueuedLoss::read() const {
  if (!slots.defined()) return value;
  if (cross_entropy) return ops::read_cross_entropy_loss(slots);
  return slots.on(Device::cpu()).data<double>()[0];  // one copy, after the work queued before it
}

QueuedLoss queue_cross_entropy(const Tensor& probs, const Tensor& logits, const Tensor& labels) {
  if (on_host(logits)) return QueuedLoss{ops::cross_entropy_forward(probs, logits, labels), Tensor(), false};
  QueuedLoss l = queued_on(logits, ops::kLossSlots, true);
  ops::cross_entropy_forward(l.slots, probs, logits, labels);
  return l;
}

QueuedLoss queue_span_cross_entropy(const Tensor& probs, const Tensor& logits, const Tensor& start, const Tensor& end) {
  if (on_host(logits)) return QueuedLoss{ops::span_cross_entropy_forward(probs, logits, start, end), Tensor(), false};
  QueuedLoss l = queued_on(logits, ops::kLossSlots, true);
  ops::span_cross_entropy_forward(l.slots, probs, logits, start, end);
  return l;
}

double classifier_loss(const std::string& problem_type, const Tensor& logits, const LossTargets& t,
                       const Tensor& dlogits, float scale) {
  return queue_classifier_loss(problem_type, logits, t, dlogits, scale).read();
}

namespace {

QueuedLoss queue_mse(const Tensor& pred, const Tensor& target) {
  if (on_host(pred)) return QueuedLoss{ops::mse_forward(pred, target), Tensor(), false};
  QueuedLoss l = queued_on(pred, 1, false);
  ops::mse_forward(l.slots, pred, target);
  return l;
}

QueuedLoss queue_bce_with_logits(const Tensor& logits, const Tensor& target) {
  if (on_host(logits)) return QueuedLoss{ops::bce_with_logits_forward(logits, target), Tensor(), false};
  QueuedLoss l = queued_on(logits, 1, false);
  ops::bce_with_logits_forward(l.slots, logits, target);
  return l;
}

}  // namespace

QueuedLoss queue_classifier_loss(const std::string& problem_type, const Tensor& logits, const LossTargets& t,
                                 const Tensor& dlogits, float scale) {
  const int64_t B = logits.size(0), L = logits.size(1);
  if (problem_type == "regression") {
    check(L == 1, "regression needs a head with one output, this one has " + std::to_string(L));
    check(t.values.defined() && t.values.numel() == B,
          "regression: " + count_of(t.values) + " targets for " + std::to_string(B) + " rows");
    const QueuedLoss loss = queue_mse(logits, t.values);
    if (dlogits.defined()) ops::mse_backward(dlogits, logits, t.values, scale);
    return loss;
  }
  if (problem_type == "multi_label_classification") {
    check(t.values.defined() && t.values.numel() == B * L, "multi-label: " + count_of(t.values) + " targets for " +
                                                               std::to_string(B) + " rows of " + std::to_string(L) +
                                                               " labels");
    const QueuedLoss loss = queue_bce_with_logits(logits, t.values);
    if (dlogits.defined()) ops::bce_with_logits_backward(dlogits, logits, t.values, scale);
    return loss;
  }
  check(problem_type == "single_label_classification" || problem_type.empty(),
        "problem_type \"" + problem_type +
            "\" is not one transformers knows (single_label_classification, multi_label_classification, regression)");
  check(t.classes.defined() && t.classes.numel() == B,
        "classification: " + count_of(t.classes) + " labels for " + std::to_string(B) + " rows");
  const Tensor probs = Tensor::empty({B, L}, DType::f32, logits.device(), MemoryCategory::activations);
  const QueuedLoss loss = queue_cross_entropy(probs, logits, t.classes);
  if (dlogits.defined()) ops::cross_entropy_backward(dlogits, probs, t.classes, scale);
  return loss;
}

}  // namespace tach::train
