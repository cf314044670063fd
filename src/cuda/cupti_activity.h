// GPU activity from CUPTI's Activity API: every kernel, copy and memset tach's work put on a
// GPU, with its device start and end, and the host time of the runtime call that queued it (so
// the profiler can put each kernel under the op that launched it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::cuda {

struct GpuActivity {
  std::string name;  // the kernel's (mangled) name, or "memcpy HtoD", "memset"
  std::string kind;  // kernel | memcpy | memset
  uint32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;  // on the steady clock, like the profiler's spans
  int64_t launch_ns = -1;            // host time of the runtime call that queued it; -1 when unknown
  int64_t bytes = 0;                 // copies and memsets
};

// One collection at a time per process (CUPTI's activity buffers are process-wide).
class ActivityCollector {
 public:
  // "" when CUPTI can collect here, else why not (no GPU, CUPTI refused: another profiler holds it).
  static std::string unavailable_reason();
  void start();  // enables the activity kinds; throws tach::Error when CUPTI refuses
  // Flushes, disables, returns everything since start(); *dropped: records CUPTI lost to full buffers.
  std::vector<GpuActivity> stop(int64_t* dropped = nullptr);

 private:
  bool running_ = false;
};

}  // namespace tach::cuda
