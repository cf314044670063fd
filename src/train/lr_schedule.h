// The learning-rate schedule of transformers' get_linear_schedule_with_warmup: linear from 0 to
// the peak over the warm-up steps, then linear down to 0 at the last step.
#pragma once

#include <cstdint>

namespace tach::train {

struct LinearSchedule {
  double peak_lr = 5e-5;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  bool decay = true;  // false: constant after the warm-up (no schedule)

  // The rate for optimizer step `step` (0 for the first, as LambdaLR's counter).
  double lr(int64_t step) const;
};

}  // namespace tach::train
