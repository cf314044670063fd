#include "train/train_eval.h"

#include <chrono>
#include <cmath>

#include "tach/bench.h"
#include "train/head_loss.h"
#include "train/loss.h"
#include "train/train_step.h"

namespace tach::train {

namespace {

// Multi-label scores from the logits [N, L] (a label is predicted where its logit is above 0) and
// the truth sets: exact-match accuracy, and F1 per label averaged over the labels that occur in
// truth or predictions (the convention classification_metrics uses for classes).
void multi_label_scores(const std::vector<float>& logits, const std::vector<std::vector<int32_t>>& truth, int64_t L,
                        EvalScores* s) {
  const int64_t N = int64_t(truth.size());
  std::vector<int64_t> tp(size_t(L), 0), fp(size_t(L), 0), fn(size_t(L), 0);
  int64_t exact = 0;
  for (int64_t n = 0; n < N; ++n) {
    std::vector<bool> want(size_t(L), false);
    for (int32_t id : truth[size_t(n)]) want[size_t(id)] = true;
    bool all = true;
    for (int64_t l = 0; l < L; ++l) {
      const bool got = logits[size_t(n * L + l)] > 0.f;
      tp[size_t(l)] += got && want[size_t(l)];
      fp[size_t(l)] += got && !want[size_t(l)];
      fn[size_t(l)] += !got && want[size_t(l)];
      all = all && got == want[size_t(l)];
    }
    exact += all;
  }
  double f1 = 0;
  int64_t present = 0;
  for (int64_t l = 0; l < L; ++l) {
    const int64_t d = 2 * tp[size_t(l)] + fp[size_t(l)] + fn[size_t(l)];
    if (d == 0) continue;
    f1 += 2.0 * double(tp[size_t(l)]) / double(d);
    ++present;
  }
  s->accuracy = N ? double(exact) / double(N) : 0;
  s->macro_f1 = present ? f1 / double(present) : 0;
}

// A per-token head's evaluation: the mean loss (masked LM: and perplexity, exp of it; token
// classification: and the accuracy over the labelled tokens). Each rank takes every size-th batch.
EvalScores evaluate_per_token(const TrainableModel& model, const TrainData& data, int64_t batch_size,
                              DataParallel* dp) {
  EvalScores s;
  const auto state = model.new_state(false);
  double sums[3] = {0, 0, 0};  // loss × rows, labelled tokens, correct ones
  int64_t batch_index = 0;
  for (int64_t begin = 0; begin < data.size(); begin += batch_size, ++batch_index) {
    if (dp && batch_index % dp->size() != dp->rank()) continue;
    std::vector<int64_t> idx;
    for (int64_t i = begin; i < std::min(data.size(), begin + batch_size); ++i) idx.push_back(i);
    TokenBatch batch;
    Targets targets;
    make_batch(data, idx, &batch, &targets);
    batch = batch.on(model.device);
    if (model.head() == Head::masked_lm) state->predicted_rows = labelled_rows(targets);
    model.forward(*state, batch, DropoutRates{});
    const int64_t L = state->logits.shape()[1];
    const Tensor host_logits = state->logits.on(Device::cpu());  // read on the host below
    const float* logits = host_logits.data<float>();
    const LossTargets labels =
        loss_targets(targets, model.head(), batch.seq_len(), model.device, &state->predicted_rows);
    sums[0] += head_loss(model.head(), "", state->logits, labels, Tensor(), 1.f) * double(idx.size());
    if (model.head() != Head::token_classification) continue;
    for (size_t t = 0; t < targets.token_labels.size(); ++t) {
      if (targets.token_labels[t] == kIgnoreIndex) continue;
      const float* row = logits + int64_t(t) * L;
      int32_t best = 0;
      for (int32_t l = 1; l < L; ++l)
        if (row[l] > row[best]) best = l;
      sums[1] += 1;
      sums[2] += best == targets.token_labels[t];
    }
  }
  if (dp) dp->comm().sum(sums, 3, "all_reduce of the evaluation's loss and counts");
  s.examples = data.size();
  s.loss = sums[0] / double(std::max<int64_t>(1, data.size()));
  if (model.head() == Head::masked_lm) s.perplexity = std::exp(s.loss);
  if (model.head() == Head::token_classification) s.accuracy = sums[1] > 0 ? sums[2] / sums[1] : 0;
  return s;
}

}  // namespace

EvalScores evaluate_trainable(const TrainableModel& model, const TrainData& data, int64_t batch_size,
                              const std::string& problem_type, DataParallel* dp, DType precision) {
  const auto t0 = std::chrono::steady_clock::now();
  const GemmPrecisionScope gemm_precision(precision);
  if (model.head() != Head::sequence_classification) {
    EvalScores s = evaluate_per_token(model, data, batch_size, dp);
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return s;
  }
  EvalScores s;
  const auto state = model.new_state(false);  // its own: the training buffers keep their size
  const int64_t L = model.num_labels();
  // Every example's logits [N, L], filled where this rank ran them (zeros elsewhere, for the sum).
  std::vector<float> all_logits(size_t(data.size() * L), 0.f);
  double loss_sum = 0;
  std::vector<int64_t> mine;
  for (int64_t i = dp ? dp->rank() : 0; i < data.size(); i += dp ? dp->size() : 1) mine.push_back(i);
  for (size_t begin = 0; begin < mine.size(); begin += size_t(batch_size)) {
    const std::vector<int64_t> idx(mine.begin() + int64_t(begin),
                                   mine.begin() + int64_t(std::min(mine.size(), begin + size_t(batch_size))));
    TokenBatch batch;
    Targets targets;
    make_batch(data, idx, &batch, &targets);
    batch = batch.on(model.device);
    model.forward(*state, batch, DropoutRates{});
    const Tensor host_logits = state->logits.on(Device::cpu());  // read on the host below
    const float* logits = host_logits.data<float>();
    loss_sum += classifier_loss(problem_type, state->logits,
                                loss_targets(targets, model.head(), batch.seq_len(), model.device), Tensor(), 1.f) *
                double(idx.size());
    for (size_t r = 0; r < idx.size(); ++r)
      std::copy(logits + int64_t(r) * L, logits + int64_t(r + 1) * L, all_logits.begin() + idx[r] * L);
  }
  if (dp) {
    dp->comm().sum(all_logits.data(), data.size() * L, "all_reduce of the evaluation's logits");
    dp->comm().sum(&loss_sum, 1, "all_reduce of the evaluation's loss");
  }
  std::vector<int32_t> predicted;
  if (!data.multi_label && !data.regression)
    for (int64_t r = 0; r < data.size(); ++r) {
      int32_t best = 0;
      for (int32_t l = 1; l < L; ++l)
        if (all_logits[size_t(r * L + l)] > all_logits[size_t(r * L + best)]) best = l;
      predicted.push_back(best);
    }
  s.examples = data.size();
  s.loss = loss_sum / double(std::max<int64_t>(1, data.size()));
  if (data.multi_label) {
    multi_label_scores(all_logits, data.label_sets, L, &s);
  } else if (!data.regression) {
    const AccuracyResult a = classification_metrics(data.classes, predicted, model.labels());
    s.accuracy = a.accuracy;
    s.macro_f1 = a.macro_f1;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace tach::train
