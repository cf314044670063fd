// A GPU's energy from NVML's total-energy counter, which moves in steps (every ~100 ms on the
// GPUs seen): the energy of one run (a forward, a training step) is the energy between two steps
// of the counter divided by the runs between them, each end known to within one run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tach/device.h"
#include "tach/monitor.h"

namespace tach::bench {

// j_per_run < 0 with the reason in source when the counter is absent or does not move in time.
struct GpuEnergy {
  double j_per_run = -1, mean_power_w = -1, window_s = 0;
  int64_t runs = 0;        // runs between the two steps of the counter
  int64_t added_runs = 0;  // runs done by finish_energy_window (after the caller's own)
  std::string source;
};

// The steps of an energy counter (J; a read < 0: unreadable) seen across runs the caller does.
// The first step seen opens the window; each later one moves its end.
class EnergyCounterSteps {
 public:
  explicit EnergyCounterSteps(std::function<double()> read_counter_j);  // reads the counter once
  bool readable() const { return readable_; }
  // One run done, the counter read after it: a new value is a step. False once unreadable.
  bool read_after_run();
  // One run done, the counter not read (a read costs time the runs would not have).
  void count_run() { ++runs_since_first_; }
  // Reads the counter without a run: a change is the new baseline, not a step (the runs since
  // the last read cannot place it).
  bool rebase();
  int steps() const { return steps_; }
  double seconds_since_first_step() const;
  // The energy per run between the first step seen and the last; j_per_run < 0 below two steps.
  GpuEnergy energy() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::function<double()> read_;
  bool readable_ = true;
  int steps_ = 0;
  double last_j_ = -1, first_j_ = -1, end_j_ = -1;
  int64_t runs_since_first_ = 0, runs_at_end_ = 0;
  Clock::time_point first_t_, end_t_;
};

// Runs `run` until the counter has stepped twice at least window_s apart (opening the window if
// the caller's runs have not), waiting at most step_wait_s for each step. Returns the energy per
// run, or the reason it is unavailable.
GpuEnergy finish_energy_window(EnergyCounterSteps& steps, const std::function<void()>& run, double window_s,
                               double step_wait_s = 2.0);

// The energy of one forward: forwards back to back between two steps at least window_s apart.
GpuEnergy measure_energy_per_run(const std::function<double()>& read_counter_j, const std::function<void()>& forward,
                                 double window_s, double step_wait_s = 2.0);

// What a GPU point's energy counts, as its method names it: an engine's worker calls (timed in
// chunks, the counter read between chunks) or tach's training steps (the counter read after each).
enum class EnergyRuns { worker_calls, training_steps };

// Why a GPU point has no NVML energy where no counter was opened.
inline constexpr const char* kEnergyWindowOff = "not measured (--energy-window 0)";

// A GPU point's NVML energy: j over its `measured` runs (the energy per run between two steps of
// the counter, times them) and the method in the words a user reads in the results; j < 0 with
// the reason where there is none: e.source, or why_not where no counter was read (e as GpuEnergy{}).
struct NvmlEnergyRecord {
  double j = -1;
  std::string source;
};
NvmlEnergyRecord nvml_energy_record(const GpuEnergy& e, EnergyRuns runs, int64_t measured, const std::string& why_not);

// The NVML sample of the GPU CUDA calls `device`: NVML numbers GPUs in its own order (and
// ignores CUDA_VISIBLE_DEVICES), so they are matched by PCI address. Empty when none matches.
std::optional<GpuSample> nvml_sample_of(const std::vector<GpuSample>& samples, Device device);

// NVML's total-energy counter of a CUDA device. reader() is empty with why_not() when NVML or
// the device is absent.
class NvmlEnergyCounter {
 public:
  explicit NvmlEnergyCounter(Device device);
  bool found() const { return index_ >= 0; }
  const std::string& why_not() const { return why_not_; }  // "unavailable: ..."
  std::function<double()> reader() const;

 private:
  GpuMonitor nvml_;
  int index_ = -1;
  std::string why_not_;
};

}  // namespace tach::bench
