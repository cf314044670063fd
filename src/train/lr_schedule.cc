#include "train/lr_schedule.h"

#include <algorithm>

namespace tach::train {

double LinearSchedule::lr(int64_t step) const {
  if (step < warmup_steps) return peak_lr * double(step) / double(std::max<int64_t>(1, warmup_steps));
  if (!decay) return peak_lr;
  return peak_lr * std::max(0.0, double(total_steps - step) / double(std::max<int64_t>(1, total_steps - warmup_steps)));
}

}  // namespace tach::train
