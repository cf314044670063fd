#include "tach/comprehensive_profiler.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "tach/error.h"
#include "tach/monitor.h"

namespace tach {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kGB = 1e9;  // decimal GB, as the layout's "_gb" fields are read

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

struct MemoryReading {
  int64_t tracked = 0;  // the device's memory in use on a CUDA device, else the RSS
  int64_t rss = 0;
};

MemoryReading read_memory(Device device) {
  MemoryReading m;
  m.rss = m.tracked = read_process_memory().rss_bytes;
  if (device.kind == DeviceKind::cuda)
    for (const auto& d : cuda_devices())
      if (d.index == device.index) m.tracked = d.total_bytes - d.free_bytes;
  return m;
}

}  // namespace

ComprehensiveProfiler::ComprehensiveProfiler(Device device, size_t throughput_window)
    : device_(usable_metrics_device(device, "ComprehensiveProfiler")),
      timer_(device_),
      throughput_(throughput_window),
      memory_series_(MetricTracker::Mode::streaming) {
  set_baseline();
}

void ComprehensiveProfiler::set_baseline() {
  const int64_t bytes = read_memory(device_).tracked;
  std::lock_guard<std::mutex> lock(mu_);
  baseline_bytes_ = bytes;
}

void ComprehensiveProfiler::start_iteration() {
  const auto t0 = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    check(!running_, "ComprehensiveProfiler::start_iteration: the previous iteration was not ended");
    running_ = true;
  }
  timer_.start("iteration");
  std::lock_guard<std::mutex> lock(mu_);
  own_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

void ComprehensiveProfiler::end_iteration(int64_t num_samples, int64_t num_tokens) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    check(running_, "ComprehensiveProfiler::end_iteration without start_iteration");
  }
  timer_.stop("iteration");
  const auto t0 = Clock::now();
  throughput_.update(num_samples, num_tokens);
  const MemoryReading m = read_memory(device_);
  memory_series_.update("memory", double(m.tracked));
  memory_series_.update("rss", double(m.rss));
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
  last_bytes_ = m.tracked;
  ++iterations_;
  own_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

int64_t ComprehensiveProfiler::iterations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return iterations_;
}

std::string ComprehensiveProfiler::to_json() const {
  const SeriesStats it = timer_.stats("iteration");
  const SeriesStats mem = memory_series_.stats("memory"), rss = memory_series_.stats("rss");
  const ThroughputTracker::Rates rates = throughput_.rates();
  const bool on_device = device_.kind == DeviceKind::cuda;
  std::lock_guard<std::mutex> lock(mu_);
  const double per_iteration_s = iterations_ > 0 ? own_seconds_ / double(iterations_) : NAN;
  nlohmann::json j = {
      {"schema", "tach.comprehensive_profile/1"},
      {"timestamp", bench::utc_now_iso()},
      {"device", on_device ? nlohmann::json(device_.index) : nlohmann::json("cpu")},
      {"memory",
       {{"source", on_device ? "the device's memory in use, all processes (cudaMemGetInfo), after each iteration"
                             : "the process's resident set (VmRSS), after each iteration"},
        {"unit", "GB (1e9 bytes)"},
        {"peak_allocated_gb", number(mem.max / kGB)},
        {"mean_allocated_gb", number(mem.mean / kGB)},
        {"baseline_gb", double(baseline_bytes_) / kGB},
        {"growth_gb", last_bytes_ >= 0 ? number(double(last_bytes_ - baseline_bytes_) / kGB) : nullptr},
        {"peak_rss_gb", number(rss.max / kGB)}}},
      {"timing",
       {{"iteration",
         {{"count", it.count},
          {"mean_sec", number(it.mean)},
          {"std_sec", number(it.std)},
          {"min_sec", number(it.min)},
          {"max_sec", number(it.max)},
          {"p50_sec", number(it.p50)},
          {"p95_sec", number(it.p95)},
          {"p99_sec", number(it.p99)}}}}},
      {"throughput",
       {{"method", "work over the wall time the last updates span (a window), and an EMA of per-iteration rates"},
        {"samples_per_sec", rates.samples_per_s},
        {"tokens_per_sec", rates.tokens_per_s},
        {"ema_samples_per_sec", rates.ema_samples_per_s},
        {"ema_tokens_per_sec", rates.ema_tokens_per_s},
        {"total_samples", rates.total_samples},
        {"total_tokens", rates.total_tokens}}},
      {"overhead",
       {{"method", "wall time inside start_iteration and end_iteration, outside the timed iteration"},
        {"per_iteration_sec", number(per_iteration_s)},
        {"fraction_of_iteration", number(per_iteration_s / it.mean)}}}};
  return j.dump(2);
}

void ComprehensiveProfiler::export_to_json(const std::string& path) const {
  namespace fs = std::filesystem;
  const std::string text = to_json() + "\n";
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    check(static_cast<bool>(out), tmp + ": cannot write");
    out << text;
    out.flush();
    check(static_cast<bool>(out), tmp + ": write failed (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  check(!ec, path + ": cannot rename into place (" + ec.message() + ")");
}

}  // namespace tach
