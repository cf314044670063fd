#include "train/train_eval.h"

#include <chrono>

#include "tach/bench.h"

namespace tach::train {

EvalScores evaluate_trainable(const TrainableModel& model, const TrainData& data, int64_t batch_size,
                              const std::string& problem_type) {
  const auto t0 = std::chrono::steady_clock::now();
  EvalScores s;
  const auto state = model.new_state(false);  // its own: the training buffers keep their size
  const int64_t L = model.num_labels();
  std::vector<int32_t> predicted;
  double loss_sum = 0;
  for (int64_t begin = 0; begin < data.size(); begin += batch_size) {
    std::vector<int64_t> idx;
    for (int64_t i = begin; i < std::min(data.size(), begin + batch_size); ++i) idx.push_back(i);
    TokenBatch batch;
    Targets targets;
    make_batch(data, idx, &batch, &targets);
    model.forward(*state, batch, DropoutRates{});
    const float* logits = state->logits.data<float>();
    loss_sum += classifier_loss(problem_type, logits, int64_t(idx.size()), L, targets, nullptr, 1.f) * double(idx.size());
    if (!data.regression)
      for (size_t r = 0; r < idx.size(); ++r) {
        int32_t best = 0;
        for (int32_t l = 1; l < L; ++l)
          if (logits[int64_t(r) * L + l] > logits[int64_t(r) * L + best]) best = l;
        predicted.push_back(best);
      }
  }
  s.examples = data.size();
  s.loss = loss_sum / double(std::max<int64_t>(1, data.size()));
  if (!data.regression) {
    const AccuracyResult a = classification_metrics(data.classes, predicted, model.labels());
    s.accuracy = a.accuracy;
    s.macro_f1 = a.macro_f1;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

}  // namespace tach::train
