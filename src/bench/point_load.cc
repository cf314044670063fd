// The load a point was measured under: other processes' CPU use over its timed runs
// (tach/monitor.h CpuLoadWindow), kept in the point, and said beside the stopping rule's verdict,
// whose precision on a contended point describes the shared machine, not the model.
#include <cstdio>

#include "bench/bench_internal.h"
#include "tach/runtime.h"

namespace tach::bench {

void record_load(PointResult& r, CpuLoadWindow& window) {
  const CpuLoad l = window.finish(threads());
  r.load.measured = l.measured;
  r.load.other_cores_mean = l.other_cores_mean;
  r.load.other_cores_max = l.other_cores_max;
  r.load.load_average_1m = l.load_average_1m;
  r.load.contended = l.contended;
  if (!l.contended) return;
  char s[240];
  std::snprintf(s, sizeof s,
                "; CONTENDED: other processes used %.2f of %d cores beside its %d thread(s), so its figures (and "
                "this rule's precision) are the shared machine's, not the model's",
                l.other_cores_mean, l.cores, l.threads);
  r.stopped_by += s;
}

}  // namespace tach::bench
