#include "analyze/gpu_time.h"

#include <algorithm>
#include <map>
#include <tuple>
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

bool is_launch_call(const std::string& name) {
  return name == "cudaLaunchKernel" || name == "cudaLaunchKernelExC" || name == "cudaMemcpyAsync" ||
         name == "cudaMemsetAsync" || name == "cuLaunchKernel" || name == "cuLaunchKernelEx" ||
         // ROCm's: what torch's HIP build and hipBLASLt call (HTA 0.5 knows none of them).
         name == "hipLaunchKernel" || name == "hipExtLaunchKernel" || name == "hipModuleLaunchKernel" ||
         name == "hipExtModuleLaunchKernel" || name == "hipMemcpyAsync" || name == "hipMemcpyWithStream" ||
         name == "hipMemsetAsync";
}

// The runtime and driver calls by correlation id (then start): a sorted table looked up by binary
// search, 24 bytes a call.
struct Call {
  int64_t correlation, start_ns, end_ns;
  bool launch;
  bool operator<(const Call& o) const { return std::tie(correlation, start_ns) < std::tie(o.correlation, o.start_ns); }
};

class Calls {
 public:
  explicit Calls(const Trace& t) {
    for (const auto& e : t.cpu) {
      const Category c = t.category(e);
      if (e.id == 0 || (c != Category::cuda_runtime && c != Category::cuda_driver)) continue;
      calls_.push_back(Call{e.id, e.start_ns, e.end_ns, is_launch_call(t.name(e))});
    }
    std::sort(calls_.begin(), calls_.end());
  }
  // The first call with this correlation id; with launch, the first that launches.
  const Call* find(int64_t correlation, bool launch = false) const {
    auto it = std::lower_bound(calls_.begin(), calls_.end(), Call{correlation, INT64_MIN, 0, false});
    for (; it != calls_.end() && it->correlation == correlation; ++it)
      if (!launch || it->launch) return &*it;
    return nullptr;
  }

 private:
  std::vector<Call> calls_;
};

// HTA's _filter_irrelevant_gpu_kernels: with two or more ProfilerStep names, only the device
// events whose launch (a call with their correlation id) started before the last step's start
// count; the last step may be cut short by the profiler stopping. Unset: every event counts.
std::optional<int64_t> last_step_start(const Trace& t) {
  std::unordered_set<uint32_t> step_names;
  int64_t last_start = INT64_MIN;
  for (const auto& e : t.cpu)
    if (t.name(e).rfind("ProfilerStep#", 0) == 0) {
      step_names.insert(t.signature(e).name);
      last_start = std::max(last_start, e.start_ns);
    }
  if (step_names.size() < 2) return std::nullopt;
  return last_start;
}

}  // namespace

std::optional<GpuTime> gpu_time(const Trace& t, size_t top) {
  std::vector<Interval> all, compute, comm;
  std::unordered_map<uint32_t, KernelStat> stats;
  GpuTime g;
  const Calls calls(t);
  const std::optional<int64_t> last_step = last_step_start(t);
  std::vector<uint32_t> counted;  // the device events counted, by index
  for (size_t i = 0; i < t.device.size(); ++i) {
    const DeviceEvent& d = t.device[i];
    if (d.category == Category::gpu_user_annotation) continue;
    if (last_step) {
      const Call* c = calls.find(d.correlation);
      if (!c || c->start_ns >= *last_step) continue;
    }
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
    counted.push_back(static_cast<uint32_t>(i));
    if (const Call* call = calls.find(d.correlation, true)) {
      const int64_t cpu = call->end_ns - call->start_ns;
      const int64_t delay = std::max<int64_t>(0, d.start_ns - call->end_ns);
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
  // Idle by cause: each stream's events by start, the gap before each one.
  std::stable_sort(counted.begin(), counted.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(t.device[a].stream, t.device[a].start_ns) < std::tie(t.device[b].stream, t.device[b].start_ns);
  });
  for (size_t i = 1; i < counted.size(); ++i) {
    const DeviceEvent& prev = t.device[counted[i - 1]];
    const DeviceEvent& d = t.device[counted[i]];
    if (prev.stream != d.stream) continue;
    const int64_t gap = d.start_ns - prev.end_ns;
    const Call* call = calls.find(d.correlation);
    if (call && call->start_ns > prev.end_ns) g.idle_by_cause.host_wait_ns += gap;
    else if (gap < kConsecutiveKernelDelayNs) g.idle_by_cause.kernel_wait_ns += gap;
    else g.idle_by_cause.other_ns += gap;
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
