// MemoryProfiler (tach/memory.h): snapshots with tags, a baseline, and growth since it.
#include <cstdio>

#include "tach/error.h"
#include "tach/memory.h"
#include "tach/metrics.h"
#include "tach/monitor.h"

namespace tach {

namespace {
std::string mib(int64_t b) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.2f MiB", double(b) / 1048576.0);
  return buf;
}
}  // namespace

MemoryProfiler::MemoryProfiler(Device device) : device_(usable_metrics_device(device, "MemoryProfiler")) {}

MemorySnapshot MemoryProfiler::measure(const std::string& tag) {
  MemorySnapshot s;
  s.tag = tag;
  s.allocator = memory_stats(device_);
  const ProcessMemory p = read_process_memory();
  s.rss_bytes = p.rss_bytes;
  s.peak_rss_bytes = p.peak_rss_bytes;
  if (device_.kind == DeviceKind::cuda)
    for (const auto& d : cuda_devices())
      if (d.index == device_.index) s.device_used_bytes = d.total_bytes - d.free_bytes;
  std::lock_guard<std::mutex> lock(mu_);
  history_.push_back(s);
  return s;
}

void MemoryProfiler::set_baseline() {
  measure("baseline");
  std::lock_guard<std::mutex> lock(mu_);
  baseline_ = int(history_.size()) - 1;
}

MemoryProfiler::Leak MemoryProfiler::detect_leak(int64_t threshold_bytes) const {
  const MemoryStats now = memory_stats(device_);
  std::lock_guard<std::mutex> lock(mu_);
  check(baseline_ >= 0, "MemoryProfiler::detect_leak needs set_baseline() first");
  const MemoryStats& base = history_[size_t(baseline_)].allocator;
  Leak l;
  l.growth_bytes = now.total.current - base.total.current;
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    const int64_t g = now.by_category[size_t(c)].current - base.by_category[size_t(c)].current;
    if (g > 0) l.growing.push_back(std::string(memory_category_name(MemoryCategory(c))) + ": " + mib(g));
  }
  l.leak = l.growth_bytes > threshold_bytes;
  l.explanation = (l.leak ? "leak: " : "no leak: ") + std::string("the allocator holds ") + mib(l.growth_bytes) +
                  " compared with the baseline (threshold " + mib(threshold_bytes).substr(1) + ")";
  return l;
}

MemoryProfiler::Leak MemoryProfiler::detect_process_leak(int64_t threshold_bytes) {
  const MemorySnapshot now = measure("leak check");
  std::lock_guard<std::mutex> lock(mu_);
  check(baseline_ >= 0, "MemoryProfiler::detect_process_leak needs set_baseline() first");
  const MemorySnapshot& base = history_[size_t(baseline_)];
  const bool device = now.device_used_bytes >= 0 && base.device_used_bytes >= 0;
  const std::string what = device ? "the device's memory in use (all processes)" : "the process's RSS";
  Leak l;
  l.growth_bytes = device ? now.device_used_bytes - base.device_used_bytes : now.rss_bytes - base.rss_bytes;
  if (l.growth_bytes > 0) l.growing.push_back((device ? "device memory: " : "rss: ") + mib(l.growth_bytes));
  l.leak = l.growth_bytes > threshold_bytes;
  l.explanation = (l.leak ? "leak: " : "no leak: ") + what + " is " + mib(l.growth_bytes) +
                  " against the baseline (threshold " + mib(threshold_bytes).substr(1) + ")";
  return l;
}

std::vector<MemorySnapshot> MemoryProfiler::history() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_;
}

}  // namespace tach
