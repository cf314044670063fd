// GPU time of one rank as Holistic Trace Analysis (HTA 0.5) defines it.
//
// Kernel types by name (hta/utils/utils.py): communication "^nccl.*Kernel"; memory "^Memcpy",
// "^Memset", "^dma"; computation every other kernel except names that contain "Memcpy" or
// "Sync" (those are "other").
// Which: as HTA reads a trace, with two or more ProfilerStep#N spans only what was launched before
// the last step began (the profiler may stop mid-step).
// Temporal breakdown (get_temporal_breakdown): every kernel, copy and set on any stream; the
// window runs from the first one's start to the last one's end; idle is the window less the
// union of them all; compute is the union of computation kernels; non-compute is the rest.
// Communication/computation overlap (get_comm_comp_overlap): the share of the communication
// kernels' union that computation kernels' union covers, in percent.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyze/trace.h"

namespace tach::analyze {

enum class KernelType { computation, communication, memory, other };
const char* kernel_type_name(KernelType t);  // COMPUTATION, COMMUNICATION, MEMORY, OTHER (as HTA)
KernelType kernel_type(const std::string& name);

struct KernelStat {
  std::string name;
  KernelType type = KernelType::computation;
  int64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0;
};

// HTA's get_cuda_kernel_launch_stats: each kernel, copy or set joined by correlation id to the
// runtime call that launched it (cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync,
// cudaMemsetAsync; also cuLaunchKernel, cuLaunchKernelEx and ROCm's hipLaunchKernel,
// hipExtModuleLaunchKernel, hipMemcpyWithStream and the like, which HTA 0.5 leaves out); launch delay: the kernel's start less the call's end, 0 when negative.
struct LaunchStats {
  int64_t launches = 0;
  int64_t cpu_ns = 0, gpu_ns = 0, delay_ns = 0;  // sums
  int64_t shorter_than_launch = 0;               // GPU duration under the call's CPU duration
  int64_t runtime_outliers = 0;                  // calls over 50 µs (HTA's runtime_cutoff)
  int64_t delay_outliers = 0;                    // delays over 100 µs (HTA's launch_delay_cutoff)
};

// HTA's get_idle_time_breakdown, summed over streams: on each stream, by start time, the gap
// before each kernel (copy, set) since the previous one's end is host wait when the kernel's
// runtime call started after that end (the host had not enqueued it yet), kernel wait when the
// gap is under 30 µs (back-to-back launch overhead), and other otherwise.
struct IdleByCause {
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
};
inline constexpr int64_t kConsecutiveKernelDelayNs = 30000;

struct GpuTime {
  int64_t window_ns = 0, idle_ns = 0, compute_ns = 0, non_compute_ns = 0;
  std::map<std::string, int64_t> kernel_types_ns;  // by kernel_type_name: summed durations
  std::vector<KernelStat> top_kernels;             // by total time, longest first
  std::optional<double> comm_comp_overlap_pct;     // unset without communication kernels
  int64_t kernels = 0;                             // kernels, copies and sets counted
  // Kernels proper (not copies or sets), and those under 10 µs (diagnosis.h's kShortKernelNs).
  int64_t launches = 0, short_launches = 0;
  LaunchStats launch;
  IdleByCause idle_by_cause;
};

// Unset for a trace without GPU events. top: how many kernels top_kernels keeps.
std::optional<GpuTime> gpu_time(const Trace& trace, size_t top = 10);

}  // namespace tach::analyze
