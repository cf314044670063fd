// Putting GPU activity (CUPTI's kernels, copies, memsets) under the ops that launched them.
#pragma once

#include <vector>

#include "tach/profile.h"

namespace tach {

// Each activity goes to the active step its launch fell in (the rest are dropped, as spans
// outside active steps are) and to the innermost op whose span held the launch, whose gpu_ns
// sums them; d.gpu_activity gets the kept ones by start time. d.events: sorted by start time,
// d.steps: filled.
void attribute_gpu_activity(ProfileData& d, const std::vector<GpuActivityEvent>& all);

}  // namespace tach
