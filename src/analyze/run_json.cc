#include "analyze/run_json.h"

#include <algorithm>

#include "analyze/report_format.h"
#include "analyze/run_ceilings.h"

namespace tach::analyze {

namespace {

using json = nlohmann::ordered_json;

// A rank's GPU figures: the temporal breakdown, kernel types, top kernels, idle causes, launches.
void add_gpu_json(json& o, const RankState& r, size_t top) {
  o["gpu"] = {{"window_us", us(r.gpu->window_ns)},
              {"idle_us", us(r.gpu->idle_ns)},
              {"compute_us", us(r.gpu->compute_ns)},
              {"non_compute_us", us(r.gpu->non_compute_ns)}};
  json types = json::object();
  for (const auto& [type, ns] : r.gpu->kernel_types_ns) types[type] = us(ns);
  o["kernel_types_us"] = types;
  std::vector<KernelStat> ks;
  for (const auto& [name, k] : r.kernels) ks.push_back(k);
  std::sort(ks.begin(), ks.end(), [](const KernelStat& a, const KernelStat& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  json top_kernels = json::array();
  for (size_t i = 0; i < ks.size() && i < top; ++i)
    top_kernels.push_back({{"name", ks[i].name},
                           {"type", kernel_type_name(ks[i].type)},
                           {"calls", ks[i].calls},
                           {"total_us", us(ks[i].total_ns)},
                           {"mean_us", us(ks[i].total_ns) / double(ks[i].calls)},
                           {"min_us", us(ks[i].min_ns)},
                           {"max_us", us(ks[i].max_ns)}});
  o["top_kernels"] = top_kernels;
  o["idle_by_cause_us"] = {{"host_wait", us(r.gpu->idle_by_cause.host_wait_ns)},
                           {"kernel_wait", us(r.gpu->idle_by_cause.kernel_wait_ns)},
                           {"other", us(r.gpu->idle_by_cause.other_ns)}};
  const LaunchStats& l = r.gpu->launch;
  o["launch"] = {{"launches", l.launches},
                 {"cpu_launch_us", us(l.cpu_ns)},
                 {"gpu_us", us(l.gpu_ns)},
                 {"mean_launch_delay_us", l.launches ? json(us(l.delay_ns) / double(l.launches)) : json(nullptr)},
                 {"kernels_shorter_than_launch", l.shorter_than_launch},
                 {"runtime_outliers", l.runtime_outliers},
                 {"launch_delay_outliers", l.delay_outliers}};
}

}  // namespace

json ops_json(const std::vector<OpRow>& rows, GroupBy group_by, const std::optional<PeakFlops>& peak) {
  json ops = json::array();
  for (const auto& r : rows) {
    const int64_t time_ns = r.device_ns > 0 ? r.device_ns : r.cpu_ns;
    json o = {
        {"name", r.name},
        {"kind", row_kind_name(r.kind)},
        {"calls", r.calls},
        {"self_cpu_us", us(r.self_cpu_ns)},
        {"cpu_us", us(r.cpu_ns)},
        {"self_device_us", us(r.self_device_ns)},
        {"device_us", us(r.device_ns)},
        {"flops", r.flops},
        {"flops_per_s", r.flops && time_ns > 0 ? json(double(r.flops) / (double(time_ns) * 1e-9)) : json(nullptr)},
        {"precision", r.precision},
        {"peak_fraction", peak_fraction(peak, r)},
        {"self_cpu_memory_bytes", r.self_cpu_memory},
        {"cpu_memory_bytes", r.cpu_memory}};
    if (group_by == GroupBy::shape) o["input_shapes"] = r.shapes;
    if (group_by == GroupBy::stack) o["stack"] = r.stack;
    ops.push_back(std::move(o));
  }
  return ops;
}

json steps_json(const std::vector<std::pair<std::string, StepRow>>& step_rows) {
  json steps = json::array();
  for (const auto& [file, s] : step_rows)
    steps.push_back({{"trace", file},
                     {"step", s.number},
                     {"wall_us", us(s.wall_ns)},
                     {"dataloader_us", us(s.dataloader_ns)},
                     {"forward_us", us(s.forward_ns)},
                     {"backward_us", us(s.backward_ns)},
                     {"optimizer_us", us(s.optimizer_ns)},
                     {"other_us", us(s.other_ns)},
                     {"gpu_busy_us", s.gpu_busy_ns >= 0 ? json(us(s.gpu_busy_ns)) : json(nullptr)},
                     {"gpu_idle_us", s.gpu_idle_ns >= 0 ? json(us(s.gpu_idle_ns)) : json(nullptr)}});
  return steps;
}

json ranks_json(const std::map<int, RankState>& ranks, size_t top) {
  json out = json::array();
  for (const auto& [rank, r] : ranks) {
    json o = {{"rank", rank},
              {"traces", r.files},
              {"step_median_us", r.step_walls_ns.empty() ? json(nullptr) : json(us(median(r.step_walls_ns)))},
              {"base_time_ns", r.base_time_ns}};
    if (r.gpu) {
      add_gpu_json(o, r, top);
    } else {
      o["gpu"] = nullptr;
      o["kernel_types_us"] = json::object();
      o["top_kernels"] = json::array();
    }
    o["comm_comp_overlap_pct"] =
        r.comm_ns > 0 ? json(100.0 * double(r.overlapped_ns) / double(r.comm_ns)) : json(nullptr);
    o["memory"] = {
        {"cpu_peak_allocated_bytes", r.cpu_peak_allocated >= 0 ? json(r.cpu_peak_allocated) : json(nullptr)},
        {"device_peak_allocated_bytes", r.device_peak_allocated >= 0 ? json(r.device_peak_allocated) : json(nullptr)}};
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace tach::analyze
