// The accuracy pass and its metrics (scikit-learn's definitions: precision, recall and F1 per
// label; macro-F1 as their mean over the labels present in the truth or the predictions).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "bench/bench_internal.h"
#include "tach/error.h"
#include "tach/monitor.h"
#include "tach/runtime.h"

namespace tach {

AccuracyResult classification_metrics(const std::vector<int32_t>& truth, const std::vector<int32_t>& predicted,
                                      const std::vector<std::string>& labels) {
  check(truth.size() == predicted.size(), "classification_metrics: " + std::to_string(truth.size()) + " labels for " +
                                              std::to_string(predicted.size()) + " predictions");
  const size_t L = labels.size();
  AccuracyResult r;
  r.examples = int64_t(truth.size());
  r.confusion.assign(L, std::vector<int64_t>(L, 0));
  int64_t correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    check(truth[i] >= 0 && size_t(truth[i]) < L && predicted[i] >= 0 && size_t(predicted[i]) < L,
          "classification_metrics: a label id outside [0, " + std::to_string(L) + ")");
    ++r.confusion[size_t(truth[i])][size_t(predicted[i])];
    correct += truth[i] == predicted[i];
  }
  if (truth.empty()) return r;
  r.accuracy = double(correct) / double(truth.size());
  double f1_sum = 0;
  int present = 0;
  int64_t majority = 0;
  for (size_t l = 0; l < L; ++l) {
    int64_t tp = r.confusion[l][l], actual = 0, guessed = 0;
    for (size_t k = 0; k < L; ++k) {
      actual += r.confusion[l][k];
      guessed += r.confusion[k][l];
    }
    ClassMetrics m;
    m.label = labels[l];
    m.support = actual;
    // A zero denominator gives 0, as scikit-learn's zero_division default (with its warning).
    m.precision = guessed ? double(tp) / double(guessed) : 0;
    m.recall = actual ? double(tp) / double(actual) : 0;
    m.f1 = m.precision + m.recall > 0 ? 2 * m.precision * m.recall / (m.precision + m.recall) : 0;
    r.per_class.push_back(m);
    majority = std::max(majority, actual);
    if (actual || guessed) {
      f1_sum += m.f1;
      ++present;
    }
  }
  r.macro_f1 = present ? f1_sum / present : 0;
  r.chance_accuracy = double(majority) / double(truth.size());
  return r;
}

std::vector<std::string> accuracy_metric_names(const std::string& task) {
  if (task == "token-classification") return {"f1", "precision", "recall", "word_accuracy"};
  if (task == "question-answering") return {"exact_match", "f1"};
  return {};
}

double accuracy_score(const std::vector<std::pair<std::string, double>>& scores, const std::string& name) {
  for (const auto& [n, v] : scores)
    if (n == name) return v;
  return std::nan("");
}

namespace bench {

int64_t accuracy_max_length(const ModelInfo& info, const BenchConfig& config) {
  return info.max_positions > 0 ? std::min(config.eval_max_length, info.max_positions) : config.eval_max_length;
}

std::vector<std::vector<size_t>> accuracy_batches(const TextSource& texts, size_t n, const BenchConfig& config) {
  // Bucketing sorts by length so that batches carry little padding; predictions go back to their
  // example by index.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  if (config.bucketing)
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return texts.examples[a].text.size() < texts.examples[b].text.size(); });
  std::vector<std::vector<size_t>> batches;
  for (size_t first = 0; first < n; first += size_t(config.eval_batch_size))
    batches.emplace_back(order.begin() + long(first),
                         order.begin() + long(std::min(n, first + size_t(config.eval_batch_size))));
  return batches;
}

std::vector<AccuracyResult> evaluate(const EncoderModel& model, const TextSource& texts, const BenchConfig& config,
                                     const BenchObserver& observer) {
  const ModelInfo& info = model.info();
  check(info.classifier, config.model + " has no classification head: accuracy needs a sequence classifier");
  check(info.problem_type == "single_label_classification",
        "accuracy needs a single-label classifier; " + config.model + " is " + info.problem_type);
  check(config.eval_batch_size > 0, "the evaluation batch size must be positive");
  const LabelMap labels(info.labels);
  const std::vector<int32_t> truth_all = labels.ids_of(texts.examples, texts.name);
  std::vector<int64_t> sizes = config.sample_sizes;
  if (sizes.empty()) sizes.push_back(int64_t(texts.examples.size()));
  std::vector<AccuracyResult> out;
  for (int64_t n_wanted : sizes) {
    check(n_wanted > 0, "sample sizes must be positive, not " + std::to_string(n_wanted));
    const size_t n = std::min(size_t(n_wanted), texts.examples.size());
    if (size_t(n_wanted) > n && observer.on_note)
      observer.on_note("sample size " + std::to_string(n_wanted) + " is more than the " + std::to_string(n) +
                       " examples there are; using all of them");
    std::vector<int32_t> predicted(n, 0);
    const int64_t max_len = accuracy_max_length(info, config);
    const std::vector<std::vector<size_t>> batches = accuracy_batches(texts, n, config);
    // One untimed forward of the first batch: a pass's first forward pays one-off costs (packing
    // caches, page faults, thread start-up) that would otherwise rank passes by their order.
    const size_t warm_rows = batches.empty() ? 0 : batches.front().size();
    if (warm_rows > 0) model.classify(text_batch(texts, info, batches.front(), max_len, /*pad_to_longest=*/true));
    CpuLoadWindow load;
    double tokenize_s = 0, model_s = 0;
    const auto t_all = std::chrono::steady_clock::now();
    for (const std::vector<size_t>& rows : batches) {
      const auto t0 = std::chrono::steady_clock::now();
      TokenBatch batch = text_batch(texts, info, rows, max_len, /*pad_to_longest=*/true);
      const auto t1 = std::chrono::steady_clock::now();
      Tensor logits = model.classify(batch);
      const auto t2 = std::chrono::steady_clock::now();
      tokenize_s += std::chrono::duration<double>(t1 - t0).count();
      model_s += std::chrono::duration<double>(t2 - t1).count();
      const int64_t L = logits.size(1);
      for (size_t i = 0; i < rows.size(); ++i) {
        const float* row = logits.data<float>() + int64_t(i) * L;
        predicted[rows[i]] = int32_t(std::max_element(row, row + L) - row);
      }
      load.sample();
    }
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
    const CpuLoad pass_load = load.finish(threads());
    const std::vector<int32_t> truth(truth_all.begin(), truth_all.begin() + long(n));
    AccuracyResult r = classification_metrics(truth, predicted, info.labels);
    r.tokenize_s = tokenize_s;
    r.model_s = model_s;
    r.total_s = total_s;
    r.samples_per_s = double(n) / total_s;
    r.warmup_batches = warm_rows > 0 ? 1 : 0;
    r.load = load_of(pass_load);
    r.predicted = std::move(predicted);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace bench
}  // namespace tach
