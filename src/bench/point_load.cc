// The load a point was measured under: other processes' CPU use over its timed runs
// (tach/monitor.h CpuLoadWindow), kept in the point, and said beside the stopping rule's verdict,
// whose precision on a contended point describes the shared machine, not the model.
#include <cstdio>

#include "bench/bench_internal.h"
#include "tach/runtime.h"

namespace tach::bench {

PointResult::Load load_of(const CpuLoad& l) {
  PointResult::Load load;
  load.measured = l.measured;
  load.other_cores_mean = l.other_cores_mean;
  load.other_cores_max = l.other_cores_max;
  load.load_average_1m = l.load_average_1m;
  load.contended = l.contended;
  return load;
}

std::string contended_rate_note(const PointResult::Load& l) {
  if (!l.measured || !l.contended) return "";
  char s[160];
  std::snprintf(s, sizeof s,
                "; CONTENDED: other processes used %.2f cores beside it, so this rate is the shared machine's",
                l.other_cores_mean);
  return s;
}

void record_load(PointResult& r, CpuLoadWindow& window) {
  const CpuLoad l = window.finish(threads());
  r.load = load_of(l);
  if (!l.contended) return;
  char s[240];
  std::snprintf(s, sizeof s,
                "; CONTENDED: other processes used %.2f of %d cores beside its %d thread(s), so its figures (and "
                "this rule's precision) are the shared machine's, not the model's",
                l.other_cores_mean, l.cores, l.threads);
  r.stopped_by += s;
}

}  // namespace tach::bench
