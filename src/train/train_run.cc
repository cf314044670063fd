// The run's counters: its step plan, the totals an epoch carries, every step's times, the memory peaks.
#include <algorithm>
#include <cmath>

#include "train/train_run.h"

namespace tach::train {

StepPlan plan_steps(const TrainOptions& o, int64_t examples, int world_size) {
  StepPlan p;
  p.examples = examples, p.batch = o.batch_size * world_size, p.accumulation = o.grad_accumulation;
  p.batches_per_epoch = (examples + p.batch - 1) / p.batch;
  p.steps_per_epoch = (p.batches_per_epoch + p.accumulation - 1) / p.accumulation;
  p.total_steps = o.max_steps > 0 ? o.max_steps : o.epochs * p.steps_per_epoch;
  p.warmup_steps = int64_t(std::ceil(o.warmup_ratio * double(p.total_steps)));
  p.schedule = {o.lr, p.warmup_steps, p.total_steps, o.schedule == "linear"};
  return p;
}

nlohmann::json EpochTotals::to_json() const {
  return {{"epoch_loss_sum", loss_sum},
          {"epoch_task_loss_sum", task_loss_sum},
          {"epoch_distill_loss_sum", distill_loss_sum},
          {"epoch_loss_count", loss_count},
          {"epoch_tokens", tokens},
          {"epoch_samples", samples},
          {"epoch_seconds", seconds}};
}

EpochTotals EpochTotals::from_json(const nlohmann::json& j) {
  EpochTotals t;
  t.loss_sum = j.value("epoch_loss_sum", 0.0);
  t.task_loss_sum = j.value("epoch_task_loss_sum", 0.0);
  t.distill_loss_sum = j.value("epoch_distill_loss_sum", 0.0);
  t.loss_count = j.value("epoch_loss_count", int64_t(0));
  t.tokens = j.value("epoch_tokens", int64_t(0));
  t.samples = j.value("epoch_samples", int64_t(0));
  t.seconds = j.value("epoch_seconds", 0.0);
  return t;
}

void StepSeries::add(const StepOutcome& s) {
  comm_ms.push_back(s.seconds.communication * 1e3);
  exposed_ms.push_back(s.seconds.communication_exposed * 1e3);
  const double t = s.seconds.total;
  step_ms.push_back(t * 1e3);
  data_ms.push_back(s.seconds.data * 1e3);
  teacher_ms.push_back(s.seconds.teacher * 1e3);
  fwd_ms.push_back(s.seconds.forward * 1e3);
  bwd_ms.push_back(s.seconds.backward * 1e3);
  opt_ms.push_back(s.seconds.optimizer * 1e3);
  tok_rates.push_back(double(s.tokens) / t);
  sample_rates.push_back(double(s.samples) / t);
}

void RunPeaks::fold(Device device) {
  const MemoryStats now = memory_stats(device);
  total = std::max(total, now.total.peak);
  for (int c = 0; c < kMemoryCategoryCount; ++c)
    by_category[size_t(c)] = std::max(by_category[size_t(c)], now.by_category[size_t(c)].peak);
}

}  // namespace tach::train
