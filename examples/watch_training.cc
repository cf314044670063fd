// A program watching itself with tach's metrics library: a memory baseline and leak check,
// named timers, windowed throughput, metric trackers, scores, and a JSON/JSONL training log.
// The "training" here is a loop of forwards of a small preset model: the point is the watching.
#include <iostream>

#include "tach/memory.h"
#include "tach/metrics.h"
#include "tach/model.h"

int main() {
  auto model = tach::load_model("preset:bert-tiny");
  const tach::TokenBatch batch = tach::TokenBatch::from_rows({{101, 2023, 3185, 102}, {101, 2307, 102}}, 0);

  tach::MemoryProfiler memory;
  memory.set_baseline();  // after loading the model
  tach::Timer timer;
  tach::ThroughputTracker throughput(20);
  tach::TrainingLogger log("watch_training.jsonl");
  for (int step = 1; step <= 50; ++step) {
    tach::Tensor logits;
    {
      auto t = timer.scope("forward");
      logits = model->classify(batch);
    }
    throughput.update(batch.batch(), batch.real_tokens());
    const double fake_loss = 1.0 / step;  // what a trainer would log
    log.log_step(step, {{"loss", fake_loss}, {"logit0", logits.data<float>()[0]}}, {1.0, std::nullopt});
    if (step % 25 == 0) log.save_checkpoint_metrics("step-" + std::to_string(step));
  }
  const auto forward = timer.stats("forward");
  const auto rates = throughput.rates();
  const auto leak = memory.detect_leak(1 << 20);
  std::cout << "forward: " << forward.count << " calls, median " << forward.p50 * 1e3 << " ms, p95 "
            << forward.p95 * 1e3 << " ms\n"
            << "throughput (last 20 updates): " << rates.samples_per_s << " samples/s, " << rates.tokens_per_s
            << " tokens/s\n"
            << "memory: " << leak.explanation << "\n";
  log.export_all("watch_training.json");
  std::cout << "wrote watch_training.jsonl and watch_training.json\n";
  return leak.leak ? 1 : 0;
}
