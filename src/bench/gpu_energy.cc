// The energy of one forward on a GPU, from NVML's total-energy counter. The counter moves in
// steps (every ~100 ms on the GPUs seen), so the difference over a short run of forwards says
// nothing: a few milliseconds of forwards read 0 J. Instead the forwards run back to back from one
// step of the counter to another at least a window later, and the energy between the two steps
// is divided by the forwards between them; each end is known to within one forward.
#include <chrono>

#include "bench/bench_internal.h"
#include "tach/monitor.h"

namespace tach::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

GpuEnergy measure_gpu_energy(const GpuMonitor& nvml, int nvml_index, const std::function<void()>& forward,
                             double window_s) {
  GpuEnergy e;
  constexpr double kStepWaitS = 2.0;  // the longest wait for the counter to move before giving up
  const auto moved_from = [&](double from, Clock::time_point since, int64_t* runs) {
    for (;;) {
      forward();
      if (runs) ++*runs;
      const double now = nvml.energy_j(nvml_index);
      if (now < 0) return -1.0;
      if (now != from) return now;
      if (seconds_since(since) > kStepWaitS) return -2.0;
    }
  };
  const double e0 = nvml.energy_j(nvml_index);
  if (e0 < 0) {
    e.source = "unavailable: NVML has no total-energy counter for this GPU";
    return e;
  }
  const double start_j = moved_from(e0, Clock::now(), nullptr);
  if (start_j < 0) {
    e.source = start_j == -1 ? "unavailable: NVML's energy counter stopped answering"
                             : "unavailable: NVML's energy counter did not move in 2 s of forwards";
    return e;
  }
  const auto t0 = Clock::now();
  int64_t runs = 0;
  while (seconds_since(t0) < window_s) {
    forward();
    ++runs;
  }
  double end_j = nvml.energy_j(nvml_index);
  end_j = moved_from(end_j, Clock::now(), &runs);
  if (end_j < 0) {
    e.source = "unavailable: NVML's energy counter did not move again within 2 s";
    return e;
  }
  e.window_s = seconds_since(t0);
  e.runs = runs;
  e.j_per_run = (end_j - start_j) / double(runs);
  e.mean_power_w = (end_j - start_j) / e.window_s;
  return e;
}

}  // namespace tach::bench
