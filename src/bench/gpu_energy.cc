// The energy of a run (a forward, a training step) on a GPU, from NVML's total-energy counter.
// The counter moves in steps (every ~100 ms on the GPUs seen), so the difference over a short
// run of forwards says nothing: a few milliseconds of forwards read 0 J. Instead the runs go back
// to back from one step of the counter to another at least a window later, and the energy between
// the two steps is divided by the runs between them; each end is known to within one run.
#include "bench/gpu_energy.h"

#include <cstdio>
#include <utility>

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

EnergyCounterSteps::EnergyCounterSteps(std::function<double()> read_counter_j) : read_(std::move(read_counter_j)) {
  last_j_ = read_();
  readable_ = last_j_ >= 0;
}

bool EnergyCounterSteps::read_after_run() {
  if (steps_ > 0) ++runs_since_first_;
  if (!readable_) return false;
  const double now = read_();
  if (now < 0) return readable_ = false;
  if (now == last_j_) return true;
  last_j_ = now;
  if (steps_++ == 0) {
    first_j_ = now;
    first_t_ = Clock::now();
    runs_since_first_ = 0;
  } else {
    end_j_ = now;
    end_t_ = Clock::now();
    runs_at_end_ = runs_since_first_;
  }
  return true;
}

bool EnergyCounterSteps::rebase() {
  if (!readable_) return false;
  const double now = read_();
  if (now < 0) return readable_ = false;
  last_j_ = now;
  return true;
}

double EnergyCounterSteps::seconds_since_first_step() const { return steps_ > 0 ? seconds_since(first_t_) : 0; }

GpuEnergy EnergyCounterSteps::energy() const {
  GpuEnergy e;
  if (steps_ < 2 || runs_at_end_ <= 0) {
    e.source = "unavailable: fewer than two steps of NVML's energy counter";
    return e;
  }
  e.window_s = std::chrono::duration<double>(end_t_ - first_t_).count();
  e.runs = runs_at_end_;
  e.j_per_run = (end_j_ - first_j_) / double(runs_at_end_);
  e.mean_power_w = e.window_s > 0 ? (end_j_ - first_j_) / e.window_s : -1;
  return e;
}

GpuEnergy finish_energy_window(EnergyCounterSteps& steps, const std::function<void()>& run, double window_s,
                               double step_wait_s) {
  GpuEnergy e;
  if (!steps.readable() && steps.steps() == 0) {
    e.source = "unavailable: NVML has no total-energy counter for this GPU";
    return e;
  }
  int64_t added = 0;
  // Runs until the counter steps past `steps_before`: "" or why not.
  const auto until_step_after = [&](int steps_before, const std::string& waiting_for) -> std::string {
    const auto since = Clock::now();
    while (steps.steps() == steps_before) {
      run();
      ++added;
      if (!steps.read_after_run()) return "unavailable: NVML's energy counter stopped answering";
      if (steps.steps() == steps_before && seconds_since(since) > step_wait_s)
        return "unavailable: NVML's energy counter did not move " + waiting_for + " " + fixed_seconds(step_wait_s);
    }
    return "";
  };
  std::string why = steps.steps() == 0 ? until_step_after(0, "in") : "";
  if (why.empty() && (steps.steps() < 2 || steps.energy().window_s < window_s)) {
    // The window's runs unread (a read costs time the runs would not have), then runs to the next step.
    while (steps.seconds_since_first_step() < window_s) {
      run();
      ++added;
      steps.count_run();
    }
    if (!steps.rebase()) why = "unavailable: NVML's energy counter stopped answering";
    if (why.empty()) why = until_step_after(steps.steps(), "again within");
  }
  if (!why.empty()) {
    e.source = why;
    e.added_runs = added;
    return e;
  }
  e = steps.energy();
  e.added_runs = added;
  return e;
}

GpuEnergy measure_energy_per_run(const std::function<double()>& read_counter_j, const std::function<void()>& forward,
                                 double window_s, double step_wait_s) {
  EnergyCounterSteps steps(read_counter_j);
  return finish_energy_window(steps, forward, window_s, step_wait_s);
}

NvmlEnergyRecord nvml_energy_record(const GpuEnergy& e, EnergyRuns runs, int64_t measured, const std::string& why_not) {
  NvmlEnergyRecord out;
  if (e.j_per_run < 0) {
    out.source = e.source.empty() ? why_not : e.source;  // a window that failed always says why
    return out;
  }
  out.j = e.j_per_run * double(measured);
  const bool calls = runs == EnergyRuns::worker_calls;
  const std::string unit = calls ? "calls" : "steps";
  char window[160];
  std::snprintf(window, sizeof window, "%lld %s between two steps of the counter %.2f s apart (mean power %.0f W",
                static_cast<long long>(e.runs), unit.c_str(), e.window_s, e.mean_power_w);
  out.source =
      std::string("NVML total energy of the GPU, whole board, over ") +
      (calls ? "the worker's measured calls: " : "the measured steps: ") + window +
      // The worker times its calls in chunks: tach sees the counter only between them.
      (calls ? "; tach reads the counter between chunks of calls, so each end is placed to within a chunk)" : ")");
  if (e.added_runs > 0)
    out.source += "; " + std::to_string(e.added_runs) + " more " + unit + " run after them to span the window";
  if (!calls) out.source += "; j is that energy per step times the " + std::to_string(measured) + " measured steps";
  return out;
}

std::optional<GpuSample> nvml_sample_of(const std::vector<GpuSample>& samples, Device device) {
  for (const CudaDeviceInfo& d : cuda_devices())
    if (d.index == device.index)
      for (const GpuSample& s : samples)
        if (s.pci_domain == d.pci_domain && s.pci_bus == d.pci_bus && s.pci_device == d.pci_device) return s;
  return std::nullopt;
}

NvmlEnergyCounter::NvmlEnergyCounter(Device device) {
  const std::optional<GpuSample> s = nvml_.available() ? nvml_sample_of(nvml_.sample(), device) : std::nullopt;
  if (s) {
    index_ = s->index;
    return;
  }
  why_not_ = "unavailable: " + (nvml_.available() ? "NVML has no device with " + device.str() + "'s PCI address"
                                                  : nvml_.unavailable_reason());
}

std::function<double()> NvmlEnergyCounter::reader() const {
  if (index_ < 0) return {};
  return [this] { return nvml_.energy_j(index_); };
}

}  // namespace tach::bench
