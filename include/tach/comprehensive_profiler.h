// ComprehensiveProfiler: one object for a training loop that is not tach's own (a PyTorch loop
// through the Python module, any C++ program): iteration time, throughput and memory, exported as
// one JSON file. The names and the JSON layout are the ones training scripts already use.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "tach/device.h"
#include "tach/metrics.h"

namespace tach {

class ComprehensiveProfiler {
 public:
  // Memory is the device's in use (cudaMemGetInfo, all processes) on a CUDA device, else the
  // process's RSS; the baseline is taken here, and again by set_baseline().
  explicit ComprehensiveProfiler(Device device = Device::cpu(), size_t throughput_window = 100);
  void start_iteration();
  // Ends the iteration start_iteration began (an error without one): its time, its work, and one
  // memory reading.
  void end_iteration(int64_t num_samples, int64_t num_tokens = 0);
  void set_baseline();
  int64_t iterations() const;
  // schema tach.comprehensive_profile/1 (docs/formats.md): timestamp, device, memory (GB: peak,
  // mean, baseline, with their source), timing.iteration (seconds), throughput, and the profiler's
  // own cost per iteration.
  std::string to_json() const;
  void export_to_json(const std::string& path) const;  // written to a temporary name, then renamed

 private:
  Device device_;
  mutable std::mutex mu_;
  Timer timer_;
  ThroughputTracker throughput_;
  MetricTracker memory_series_;  // bytes per iteration, streaming (O(1) memory): "memory", "rss"
  int64_t baseline_bytes_ = 0, last_bytes_ = -1, iterations_ = 0;
  double own_seconds_ = 0;  // time spent inside start_iteration and end_iteration
  bool running_ = false;
};

}  // namespace tach
