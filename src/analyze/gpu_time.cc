#include "analyze/gpu_time.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "analyze/diagnosis.h"
#include "analyze/intervals.h"

namespace tach::analyze {

const char* kernel_type_name(KernelType t) {
  switch (t) {
    case KernelType::computation: return "COMPUTATION";
    case KernelType::communication: return "COMMUNICATION";
    case KernelType::memory: return "MEMORY";
    case KernelType::other: return "OTHER";
  }
  return "OTHER";
}

KernelType kernel_type(const std::string& name) {
  auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
  auto has = [&](const char* p) { return name.find(p) != std::string::npos; };
  // "^nccl.*Kernel": a name that starts with nccl and has Kernel after it.
  const bool nccl = starts("nccl") && name.find("Kernel", 4) != std::string::npos;
  if (nccl) return KernelType::communication;
  if (starts("Memcpy") || starts("Memset") || starts("dma")) return KernelType::memory;
  // HTA's NCCL_COMPUTE_KERNEL_RE, "(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)" under
  // re.match: Memcpy anywhere, Memset at the start, Sync anywhere.
  if (has("Memcpy") || has("Sync")) return KernelType::other;
  return KernelType::computation;
}

namespace {

// HTA's _filter_irrelevant_gpu_kernels: with two or more ProfilerStep names, only the device
// events whose launch (a CPU event with their correlation id) started before the last step's
// start count; the last step may be cut short by the profiler stopping.
std::optional<std::unordered_set<int64_t>> launched_before_last_step(const Trace& t) {
  std::unordered_set<uint32_t> step_names;
  int64_t last_start = INT64_MIN;
  for (const auto& e : t.cpu)
    if (t.strings.str(e.name).rfind("ProfilerStep#", 0) == 0) {
      step_names.insert(e.name);
      last_start = std::max(last_start, e.start_ns);
    }
  if (step_names.size() < 2) return std::nullopt;
  std::unordered_set<int64_t> kept;
  for (const auto& e : t.cpu)
    if (e.correlation != 0 && e.start_ns < last_start) kept.insert(e.correlation);
  return kept;
}

bool is_launch_call(const std::string& name) {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
         name == "cudaMemsetAsync" || name == "cuLaunchKernel" || name == "cuLaunchKernelEx" ||
         name == "hipLaunchKernel" || name == "hipExtLaunchKernel";
}

}  // namespace

std::optional<GpuTime> gpu_time(const Trace& t, size_t top) {
  std::vector<Interval> all, compute, comm;
  std::unordered_map<uint32_t, KernelStat> stats;
  GpuTime g;
  const auto kept = launched_before_last_step(t);
  // The launching calls by correlation id: [start, end); and any runtime call's start (idle causes).
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> calls;
  std::unordered_map<int64_t, int64_t> call_start;
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> by_stream;  // stream: (start, index)
  for (const auto& e : t.cpu) {
    if (e.correlation == 0 || (e.category != Category::cuda_runtime && e.category != Category::cuda_driver)) continue;
    call_start.emplace(e.correlation, e.start_ns);
    if (kept && !kept->count(e.correlation)) continue;
    if (is_launch_call(t.strings.str(e.name))) calls.emplace(e.correlation, std::make_pair(e.start_ns, e.end_ns));
  }
  for (const auto& d : t.device) {
    if (d.category == Category::gpu_user_annotation) continue;
    if (kept && !kept->count(d.correlation)) continue;
    const std::string& name = t.strings.str(d.name);
    const KernelType type = kernel_type(name);
    const int64_t dur = d.end_ns - d.start_ns;
    all.emplace_back(d.start_ns, d.end_ns);
    if (type == KernelType::computation) compute.emplace_back(d.start_ns, d.end_ns);
    if (type == KernelType::communication) comm.emplace_back(d.start_ns, d.end_ns);
    g.kernel_types_ns[kernel_type_name(type)] += dur;
    KernelStat& s = stats[d.name];
    if (s.calls == 0) {
      s.name = name;
      s.type = type;
      s.min_ns = dur;
    }
    s.calls += 1;
    s.total_ns += dur;
    s.min_ns = std::min(s.min_ns, dur);
    s.max_ns = std::max(s.max_ns, dur);
    ++g.kernels;
    by_stream[d.stream].emplace_back(d.start_ns, int64_t(&d - t.device.data()));
    if (const auto call = calls.find(d.correlation); call != calls.end()) {
      const int64_t cpu = call->second.second - call->second.first;
      const int64_t delay = std::max<int64_t>(0, d.start_ns - call->second.second);
      LaunchStats& l = g.launch;
      ++l.launches;
      l.cpu_ns += cpu;
      l.gpu_ns += dur;
      l.delay_ns += delay;
      l.shorter_than_launch += dur < cpu;
      l.runtime_outliers += cpu > 50000;
      l.delay_outliers += delay > 100000;
    }
    if (d.category == Category::kernel) {
      ++g.launches;
      if (dur < kShortKernelNs) ++g.short_launches;
    }
  }
  if (all.empty()) return std::nullopt;
  for (auto& [stream, kernels] : by_stream) {
    std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 1; i < kernels.size(); ++i) {
      const DeviceEvent& prev = t.device[size_t(kernels[i - 1].second)];
      const DeviceEvent& d = t.device[size_t(kernels[i].second)];
      const int64_t gap = d.start_ns - prev.end_ns;
      const auto call = call_start.find(d.correlation);
      if (call != call_start.end() && call->second > prev.end_ns) g.idle_by_cause.host_wait_ns += gap;
      else if (gap < kConsecutiveKernelDelayNs) g.idle_by_cause.kernel_wait_ns += gap;
      else g.idle_by_cause.other_ns += gap;
    }
  }
  all = merge_intervals(std::move(all));
  compute = merge_intervals(std::move(compute));
  comm = merge_intervals(std::move(comm));
  g.window_ns = all.back().second - all.front().first;
  g.idle_ns = g.window_ns - covered_ns(all);
  g.compute_ns = covered_ns(compute);
  g.non_compute_ns = g.window_ns - g.compute_ns - g.idle_ns;
  if (!comm.empty()) g.comm_comp_overlap_pct = 100.0 * double(overlap_ns(comm, compute)) / double(covered_ns(comm));
  for (auto& [id, s] : stats) g.top_kernels.push_back(std::move(s));
  std::sort(g.top_kernels.begin(), g.top_kernels.end(), [](const KernelStat& a, const KernelStat& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (g.top_kernels.size() > top) g.top_kernels.resize(top);
  return g;
}

}  // namespace tach::analyze
