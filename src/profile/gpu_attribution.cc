#include "profile/gpu_attribution.h"

#include <algorithm>

namespace tach {

void attribute_gpu_activity(ProfileData& d, const std::vector<GpuActivityEvent>& all) {
  for (const GpuActivityEvent& src : all) {
    GpuActivityEvent g = src;
    for (const StepSample& s : d.steps)
      if (s.active && g.launch_ns >= s.start_ns && g.launch_ns < s.end_ns) g.step = s.step;
    if (g.step < 0) continue;
    // The innermost op open at the launch: the latest-starting op span that contains it.
    const auto first_after = std::upper_bound(d.events.begin(), d.events.end(), g.launch_ns,
                                              [](int64_t t, const ProfileEvent& e) { return t < e.start_ns; });
    for (auto it = first_after; it != d.events.begin();) {
      --it;
      if (it->kind == EventKind::op && it->end_ns > g.launch_ns) {
        g.op = int64_t(it - d.events.begin());
        it->gpu_ns += double(g.end_ns - g.start_ns);
        break;
      }
      if (g.launch_ns - it->start_ns > int64_t(1e9)) break;  // no op span runs a second: none holds it
    }
    d.gpu_activity.push_back(std::move(g));
  }
  std::sort(d.gpu_activity.begin(), d.gpu_activity.end(),
            [](const GpuActivityEvent& a, const GpuActivityEvent& b) { return a.start_ns < b.start_ns; });
}

}  // namespace tach
