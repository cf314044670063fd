// What the operating system says about this process: resident memory and CPU time, from procfs.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tach {

struct ProcessMemory {
  int64_t rss_bytes = 0;       // VmRSS: resident now
  int64_t peak_rss_bytes = 0;  // VmHWM: the most resident since start, or since reset_peak_rss()
};

// Reads /proc/self/status. Zeros where procfs is absent (not Linux).
ProcessMemory read_process_memory();

// Resets VmHWM to the current RSS (writes "5" to /proc/self/clear_refs, Linux 4.0+), so that
// a phase can measure its own peak. False when the kernel refuses; the peak is then the
// process's peak so far, and callers must say so.
bool reset_peak_rss();

// One reading of a process from procfs.
struct ProcessSample {
  double t_s = 0;  // seconds since the sampler started (steady clock)
  int64_t rss_bytes = 0, peak_rss_bytes = 0;
  double user_s = 0, system_s = 0;  // CPU time so far
  double cpu_percent = 0;           // since the previous sample; 100 = one core busy
  int threads = 0;
  bool alive = true;
};
bool read_process_sample(pid_t pid, ProcessSample* out);  // false once the process is gone

// CPU package and DRAM energy from RAPL (/sys/class/powercap/intel-rapl*), with counter
// wrap-around handled. Unavailable (a VM, no permission) is reported with the reason, never guessed.
class RaplEnergy {
 public:
  RaplEnergy();
  bool available() const { return !domains_.empty(); }
  const std::string& unavailable_reason() const { return reason_; }
  std::vector<std::string> domains() const;  // "package-0", "dram", ...
  double joules();  // energy since construction, all domains (package domains include their cores)

 private:
  struct Domain {
    std::string name, path;
    uint64_t max_uj = 0, last_uj = 0;
    double total_j = 0;
  };
  std::vector<Domain> domains_;
  std::string reason_;
};

// NVIDIA GPUs through NVML, loaded at run time (dlopen), so tach builds and runs without a driver.
struct GpuSample {
  int index = 0;
  double utilization_percent = -1, memory_utilization_percent = -1;
  int64_t memory_used_bytes = -1, memory_total_bytes = -1;
  double power_w = -1, energy_j = -1;  // energy: the driver's total-energy counter (since driver load)
  int sm_clock_mhz = -1, memory_clock_mhz = -1, temperature_c = -1;
  uint64_t throttle_reasons = 0;
  // NVML numbers GPUs its own way; CUDA's is matched by PCI address.
  int pci_domain = -1, pci_bus = -1, pci_device = -1;
};
class GpuMonitor {
 public:
  GpuMonitor();
  ~GpuMonitor();
  bool available() const { return count_ > 0; }
  const std::string& unavailable_reason() const { return reason_; }  // one line
  int count() const { return count_; }
  std::vector<GpuSample> sample() const;
  // The total-energy counter alone (one NVML call), in J; -1 when unavailable. index: NVML's.
  double energy_j(int index) const;

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  int count_ = 0;
  std::string reason_;
};

// Samples a process (and the GPUs and RAPL, when there) on a background thread every interval.
struct MonitorSample {
  ProcessSample process;
  std::vector<GpuSample> gpus;
  double cpu_energy_j = -1;  // RAPL since start; -1 when unavailable
};
class ProcessSampler {
 public:
  ProcessSampler(pid_t pid, double interval_s);
  ~ProcessSampler();
  void start();
  void stop();
  std::vector<MonitorSample> samples() const;
  const GpuMonitor& gpus() const { return gpu_; }
  const RaplEnergy& rapl() const { return rapl_; }
  double sampling_cost_s() const;  // median time one sample took, the sampler's own cost

 private:
  void loop();
  pid_t pid_;
  double interval_s_;
  GpuMonitor gpu_;
  RaplEnergy rapl_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<MonitorSample> samples_;
  std::vector<double> cost_s_;
};

}  // namespace tach
