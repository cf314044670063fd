#include "analyze/run_findings.h"

#include <algorithm>
#include <map>
#include <string>

#include "analyze/diagnosis.h"
#include "analyze/report_format.h"

namespace tach::analyze {

namespace {

using json = nlohmann::ordered_json;

// The memory-bound ops of the roofline: their self time, the longest three, their bandwidth share.
void add_roofline_input(DiagnosisInput& d, const std::vector<OpRow>& ops, const json& roofline, bool any_gpu) {
  // Self time per name: kernels an op launched itself, or its own CPU time.
  std::map<std::string, int64_t> self_ns;
  for (const auto& r : ops)
    if (r.kind == RowKind::cpu) self_ns[r.name] += any_gpu ? r.self_device_ns : r.self_cpu_ns;
  d.roofline_base_ns = any_gpu ? d.kernel_ns : d.total_self_cpu_ns;
  double bytes = 0, seconds = 0;
  std::vector<std::pair<int64_t, std::string>> bound;
  for (const auto& o : roofline["ops"]) {
    if (o["bound"] != "memory") continue;
    const std::string name = o["name"].get<std::string>();
    bound.emplace_back(self_ns[name], name);
    d.memory_bound_ns += self_ns[name];
    bytes += o["bytes"].get<double>();
    seconds += o["time_us"].get<double>() * 1e-6;
    d.ridge = std::max(d.ridge, o["ridge"].get<double>());
  }
  std::sort(bound.begin(), bound.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < bound.size() && i < 3; ++i) d.memory_bound_ops.push_back(bound[i].second);
  const double bandwidth = roofline["memory_bytes_per_s"].get<double>();
  if (seconds > 0 && bandwidth > 0) d.memory_bound_bandwidth_fraction = bytes / seconds / bandwidth;
}

// A GPU run's f32 GEMMs (by the ops' input types) and CUDA-core GEMM kernels (by their names).
void add_gemm_input(DiagnosisInput& d, const RunRecords& run, const std::vector<OpRow>& ops,
                    const std::optional<PeakFlops>& peak) {
  std::map<std::string, int64_t> f32_gemm_ns;
  for (const auto& r : ops) {
    if (r.kind != RowKind::cpu || r.precision != "f32" || !is_gemm_op(r.name) || r.self_device_ns <= 0) continue;
    f32_gemm_ns[r.name] += r.self_device_ns;
    d.f32_gemm_ns += r.self_device_ns;
    if (r.flops > 0) d.f32_gemm_flops += r.flops, d.f32_gemm_flops_ns += r.self_device_ns;
  }
  std::vector<std::pair<int64_t, std::string>> by_time;
  for (const auto& [name, ns] : f32_gemm_ns) by_time.emplace_back(ns, name);
  std::sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < by_time.size() && i < 3; ++i) d.f32_gemm_ops.push_back(by_time[i].second);
  if (peak) {
    d.peak_f32 = peak->f32, d.peak_tf32 = peak->tf32, d.peak_bf16 = peak->bf16;
    d.peak_device = peak->device;
    d.peak_half = peak->half;
  }
  int64_t longest = 0;
  for (const auto& [rank, r] : run.ranks)
    for (const auto& [name, k] : r.kernels) {
      if (!is_cuda_core_gemm_kernel(name)) continue;
      d.cuda_core_gemm_ns += k.total_ns;
      if (k.total_ns > longest) longest = k.total_ns, d.cuda_core_gemm_kernel = name;
    }
  // cuBLAS names run to 150 characters: the part that says what it is.
  if (d.cuda_core_gemm_kernel.size() > 48) d.cuda_core_gemm_kernel = d.cuda_core_gemm_kernel.substr(0, 45) + "...";
}

DiagnosisInput diagnosis_input(const RunRecords& run, const std::vector<OpRow>& ops, const json& roofline,
                               const std::optional<PeakFlops>& peak) {
  DiagnosisInput d;
  for (const auto& [file, st] : run.step_rows) {
    d.step_wall_ns += st.wall_ns;
    d.step_dataloader_ns += st.dataloader_ns;
  }
  for (const auto& [rank, r] : run.ranks) {
    d.comm_ns += r.comm_ns;
    d.comm_overlapped_ns += r.overlapped_ns;
    if (!r.gpu) continue;
    d.gpu = true;
    d.window_ns += r.gpu->window_ns;
    d.idle_ns += r.gpu->idle_ns;
    d.kernels += r.gpu->launches;
    d.short_kernels += r.gpu->short_launches;
    for (const auto& [type, ns] : r.gpu->kernel_types_ns) {
      d.kernel_ns += ns;
      if (type == "MEMORY") d.memory_kernel_ns += ns;
    }
  }
  for (const auto& r : ops) {
    d.total_self_cpu_ns += r.self_cpu_ns;
    if (r.kind == RowKind::cpu && r.self_cpu_ns > d.top_self_cpu_ns) {
      d.top_self_cpu_ns = r.self_cpu_ns;
      d.top_self_cpu_op = r.name;
    }
  }
  const bool any_gpu = run.any_gpu();
  if (!roofline.is_null()) add_roofline_input(d, ops, roofline, any_gpu);
  if (any_gpu) add_gemm_input(d, run, ops, peak);
  return d;
}

// A rank whose median step is 10% or more above the median of the ranks' medians (every rank
// waits for it at each collective).
void add_stragglers(json& findings, const RunRecords& run) {
  std::vector<int64_t> medians;
  for (const auto& [rank, r] : run.ranks)
    if (!r.step_walls_ns.empty()) medians.push_back(median(r.step_walls_ns));
  if (medians.size() <= 1) return;
  const int64_t all = median(medians);
  for (const auto& [rank, r] : run.ranks) {
    if (r.step_walls_ns.empty() || all <= 0) continue;
    const int64_t m = median(r.step_walls_ns);
    if (m * 10 >= all * 11)
      findings.push_back("straggler: rank " + std::to_string(rank) + "'s median step, " + fmt("%.3f", us(m) * 1e-3) +
                         " ms, is " + fmt("%.0f%%", 100.0 * double(m - all) / double(all)) +
                         " above the ranks' median; the others wait for it at every collective");
  }
}

}  // namespace

json run_findings(const RunRecords& run, const std::vector<OpRow>& ops, const json& roofline,
                  const std::optional<PeakFlops>& peak) {
  json findings = json::array();
  for (const auto& f : diagnose(diagnosis_input(run, ops, roofline, peak))) {
    if (f == "no bottleneck stands out by these rules" && run.ranks.size() > 1) continue;  // stragglers below
    findings.push_back(f);
  }
  add_stragglers(findings, run);
  if (findings.empty()) findings.push_back("no bottleneck stands out by these rules");
  return findings;
}

}  // namespace tach::analyze
