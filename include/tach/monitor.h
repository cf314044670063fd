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

// The peak resident set of a command tach started (fork, then exec). The kernel's figure for a
// child (wait4's ru_maxrss) is the larger of its peak after exec and its pre-exec copy of tach,
// which counts tach's own pages (about 100 MiB for a command that peaks near 2 MiB). So:
// where ru_maxrss passes the pre-exec copy's peak (read while the child waited to exec) by more
// than the few pages exec itself touches, it is the command's own peak; below that, the command's
// peak is the highest VmHWM sampled after exec (a lower bound: growth after the last sample is
// not seen), or unknown where it exited before a sample after its start.
struct CommandPeak {
  int64_t bytes = 0;  // 0: not measured
  bool exact = false;
  std::string method;  // how it was read, or why it is not known
};
CommandPeak command_peak_rss(int64_t pre_exec_peak_bytes, int64_t ru_maxrss_bytes, int64_t sampled_peak_bytes);

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

// Other processes' CPU use (monitor/cpu_load.cc). The CPU time the whole machine and this
// process had used at one moment, from procfs, in the clock ticks both files count in.
struct CpuTimes {
  double machine_busy_s = 0;  // every core's busy time: /proc/stat's "cpu" line, all but idle and iowait
  double self_s = 0;          // this process's user + system time, every thread (/proc/self/stat)
  double wall_s = 0;          // steady clock
  bool ok = false;            // false where procfs is absent
};
CpuTimes read_cpu_times();
// Cores' worth of CPU time other processes used between two readings: the machine's busy time
// minus this process's, over the wall time between them. 0 where either reading failed.
double other_cores_between(const CpuTimes& before, const CpuTimes& after);
double load_average_1m();  // /proc/loadavg's first figure; -1 where absent
int online_cores();        // the cores /proc/stat counts

// Work on `threads` threads shares cores with other processes when those used more than the cores
// it left free, by more than kContentionSlackCores (measurement noise and the odd daemon): other
// cores > cores - threads + 0.25. On 2 cores: 2 threads are contended above 0.25 other cores, 1
// thread above 1.25.
inline constexpr double kContentionSlackCores = 0.25;
bool threads_share_cores(double other_cores, int threads, int cores);

// Other processes' CPU use over a window of work: the mean over the whole window, the highest
// over sub-windows of at least kLoadSubWindowS (read by sample() between pieces of work, never
// inside a timing), and whether the work's threads had to share cores (contended, by the mean).
struct CpuLoad {
  // false where procfs is absent, or where /proc/stat counts less than this process alone used
  // (a container's own view, blind to the machine): the other fields are then 0, meaning unknown
  bool measured = false;
  double window_s = 0;
  double other_cores_mean = 0, other_cores_max = 0;  // cores
  double load_average_1m = 0;                        // at the window's end
  int cores = 0, threads = 0;
  bool contended = false;
};
inline constexpr double kLoadSubWindowS = 0.25;
// The shortest window read: /proc/stat counts 10 ms ticks, so a few milliseconds of work say
// nothing; a shorter window is extended by waiting, idle, until it is this long.
inline constexpr double kMinLoadWindowS = 0.5;
class CpuLoadWindow {
 public:
  CpuLoadWindow();  // the window starts here
  void sample();    // cheap unless kLoadSubWindowS passed since the last reading (then two procfs reads)
  CpuLoad finish(int threads, double min_window_s = kMinLoadWindowS);
  double elapsed_s() const;  // since the window started

 private:
  CpuTimes start_, last_;
  double max_ = 0;
};
// "other processes used 1.02 cores (mean; 1.10 at most) of 2 while 2 threads ran, load average 2.31"
std::string describe_cpu_load(const CpuLoad& l);

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
