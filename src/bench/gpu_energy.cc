// The energy of one forward on a GPU, from NVML's total-energy counter. The counter moves in
// steps (every ~100 ms on the GPUs seen), so the difference over a short run of forwards says
// nothing: a few milliseconds of forwards read 0 J. Instead the forwards run back to back from one
// step of the counter to another at least a window later, and the energy between the two steps
// is divided by the forwards between them; each end is known to within one forward.
#include <chrono>
#include <cstdio>
#include <string>

#include "bench/bench_internal.h"

namespace tach::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string fixed_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

}  // namespace

GpuEnergy measure_energy_per_run(const std::function<double()>& read_counter_j, const std::function<void()>& forward,
                                 double window_s, double step_wait_s) {
  GpuEnergy e;
  // Forwards until the counter differs from `from` (its new value), or -1 when it stops
  // answering, -2 when it has not moved after step_wait_s.
  const auto moved_from = [&](double from, Clock::time_point since, int64_t* runs) {
    for (;;) {
      forward();
      if (runs) ++*runs;
      const double now = read_counter_j();
      if (now < 0) return -1.0;
      if (now != from) return now;
      if (seconds_since(since) > step_wait_s) return -2.0;
    }
  };
  const double e0 = read_counter_j();
  if (e0 < 0) {
    e.source = "unavailable: NVML has no total-energy counter for this GPU";
    return e;
  }
  const double start_j = moved_from(e0, Clock::now(), nullptr);
  if (start_j < 0) {
    e.source = start_j == -1 ? "unavailable: NVML's energy counter stopped answering"
                             : "unavailable: NVML's energy counter did not move in " + fixed_seconds(step_wait_s) +
                                   " of forwards";
    return e;
  }
  const auto t0 = Clock::now();
  int64_t runs = 0;
  while (seconds_since(t0) < window_s) {
    forward();
    ++runs;
  }
  double end_j = read_counter_j();
  end_j = moved_from(end_j, Clock::now(), &runs);
  if (end_j < 0) {
    e.source = "unavailable: NVML's energy counter did not move again within " + fixed_seconds(step_wait_s);
    return e;
  }
  e.window_s = seconds_since(t0);
  e.runs = runs;
  e.j_per_run = (end_j - start_j) / double(runs);
  e.mean_power_w = (end_j - start_j) / e.window_s;
  return e;
}

}  // namespace tach::bench
