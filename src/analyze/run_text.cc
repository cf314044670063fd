#include "analyze/run_text.h"

#include <filesystem>
#include <functional>
#include <sstream>

#include "analyze/report_format.h"
#include "analyze/run_ceilings.h"

namespace tach::analyze {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// fraction: an op's share of the peak its precision runs at (roofline), or nullopt.
std::string ops_text(const std::vector<OpRow>& rows, const std::string& sort_by, GroupBy group_by, size_t top,
                     bool device, const std::function<std::optional<double>(const OpRow&)>& fraction) {
  std::ostringstream s;
  s << "Ops (as torch's key_averages(), by " << sort_by << "; " << std::min(top, rows.size()) << " of " << rows.size()
    << " rows)\n";
  s << pad("name", 48) << pad("calls", 8, true) << pad("self CPU ms", 13, true) << pad("CPU ms", 11, true);
  if (device) s << pad("self dev ms", 13, true) << pad("dev ms", 11, true);
  s << pad("GFLOP", 10, true) << pad("GFLOP/s", 9, true) << pad("% peak", 8, true) << pad("self CPU mem", 14, true);
  if (group_by != GroupBy::name) s << "  " << (group_by == GroupBy::shape ? "input shapes" : "stack");
  s << "\n";
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const OpRow& r = rows[i];
    const int64_t time_ns = device && r.device_ns > 0 ? r.device_ns : r.cpu_ns;
    s << pad(r.name, 48) << pad(std::to_string(r.calls), 8, true)
      << pad(fmt("%.3f", us(r.self_cpu_ns) * 1e-3), 13, true) << pad(fmt("%.3f", us(r.cpu_ns) * 1e-3), 11, true);
    if (device)
      s << pad(fmt("%.3f", us(r.self_device_ns) * 1e-3), 13, true)
        << pad(fmt("%.3f", us(r.device_ns) * 1e-3), 11, true);
    s << pad(r.flops ? fmt("%.3f", double(r.flops) * 1e-9) : "-", 10, true)
      << pad(r.flops && time_ns > 0 ? fmt("%.2f", double(r.flops) / double(time_ns)) : "-", 9, true)
      << pad(fraction(r) ? fmt("%.1f", *fraction(r) * 100) : "-", 8, true)
      << pad(bytes_text(r.self_cpu_memory), 14, true);
    if (group_by == GroupBy::shape) s << "  " << r.shapes;
    if (group_by == GroupBy::stack) {
      s << " ";
      for (const auto& f : r.stack) s << " <- " << f;
    }
    s << "\n";
  }
  return s.str();
}

void header_text(std::ostringstream& s, const RunRecords& run, const json& notes) {
  s << "tach analyze: " << run.files.size() << " trace" << (run.files.size() == 1 ? "" : "s") << ", "
    << run.ranks.size() << " rank" << (run.ranks.size() == 1 ? "" : "s") << "\n";
  for (const auto& n : notes) s << "note: " << n.get<std::string>() << "\n";
  if (run.ranks.size() > 1) {
    // Each rank's trace clock starts at its own baseTimeNanoseconds; what they differ by is said,
    // not corrected (torch writes no synchronised clock).
    const int64_t base0 = run.ranks.begin()->second.base_time_ns;
    std::string offsets;
    for (const auto& [rank, r] : run.ranks)
      if (r.base_time_ns && base0 && r.base_time_ns != base0)
        offsets += " rank " + std::to_string(rank) + " " + fmt("%+.3f", double(r.base_time_ns - base0) * 1e-6) + " ms;";
    if (!offsets.empty())
      s << "clock offsets (baseTimeNanoseconds against rank " << run.ranks.begin()->first << "):" << offsets << "\n";
  }
}

void roofline_text(std::ostringstream& s, const json& roofline, size_t top) {
  s << "% peak: FLOP/s against " << roofline["device"].get<std::string>() << " ("
    << roofline["source"].get<std::string>() << "), at each op's precision\n";
  s << "\nRoofline (bytes moved from the recorded shapes and dtypes; memory "
    << fmt("%.1f GB/s", roofline["memory_bytes_per_s"].get<double>() * 1e-9) << ", "
    << roofline["memory_source"].get<std::string>() << ")\n";
  if (roofline["ops"].empty()) {
    s << "no op whose bytes the shapes give (record_shapes=True records them; mm, addmm, bmm, linear, "
         "attention, elementwise ops, softmax and layer_norm are costed)\n";
    return;
  }
  s << pad("name", 44) << pad("calls", 8, true) << pad("ms", 10, true) << pad("FLOP/byte", 11, true)
    << pad("ridge", 8, true) << pad("GFLOP/s", 10, true) << pad("GB/s", 9, true) << pad("% peak", 8, true)
    << pad("% bw", 7, true) << "  bound\n";
  size_t n = 0;
  bool above_bandwidth = false;
  for (const auto& o : roofline["ops"]) {
    if (n++ == top) break;
    s << pad(o["name"].get<std::string>(), 44) << pad(std::to_string(o["calls"].get<int64_t>()), 8, true)
      << pad(fmt("%.3f", o["time_us"].get<double>() * 1e-3), 10, true)
      << pad(fmt("%.2f", o["intensity"].get<double>()), 11, true) << pad(fmt("%.1f", o["ridge"].get<double>()), 8, true)
      << pad(fmt("%.2f", o["flops_per_s"].get<double>() * 1e-9), 10, true)
      << pad(fmt("%.2f", o["bytes_per_s"].get<double>() * 1e-9), 9, true)
      << pad(o["peak_fraction"].is_null() ? "-" : fmt("%.1f", o["peak_fraction"].get<double>() * 100), 8, true)
      << pad(fmt("%.1f", o["bandwidth_fraction"].get<double>() * 100), 7, true) << "  " << o["bound"].get<std::string>()
      << (o["bandwidth_fraction"].get<double>() > 1 ? "*" : "") << "\n";
    above_bandwidth |= o["bandwidth_fraction"].get<double>() > 1;
  }
  if (above_bandwidth)
    s << "* moved its bytes faster than the memory bandwidth: they came from the caches (its tensors fit in "
         "them), so the bandwidth is no ceiling for it\n";
}

void steps_text(std::ostringstream& s, const RunRecords& run, bool any_gpu) {
  s << "\nSteps (ProfilerStep#N; ms)\n";
  if (run.step_rows.empty()) {
    s << "no ProfilerStep#N spans in these traces (torch.profiler's schedule and prof.step() write them)\n";
    return;
  }
  s << pad("trace", 36) << pad("step", 6, true) << pad("wall", 10, true) << pad("data", 9, true)
    << pad("forward", 9, true) << pad("backward", 10, true) << pad("optim", 9, true) << pad("other", 9, true)
    << (any_gpu ? pad("GPU busy", 10, true) : "") << "\n";
  for (const auto& [file, st] : run.step_rows) {
    s << pad(fs::path(file).filename().string(), 36) << pad(std::to_string(st.number), 6, true)
      << pad(fmt("%.3f", us(st.wall_ns) * 1e-3), 10, true) << pad(fmt("%.3f", us(st.dataloader_ns) * 1e-3), 9, true)
      << pad(fmt("%.3f", us(st.forward_ns) * 1e-3), 9, true) << pad(fmt("%.3f", us(st.backward_ns) * 1e-3), 10, true)
      << pad(fmt("%.3f", us(st.optimizer_ns) * 1e-3), 9, true) << pad(fmt("%.3f", us(st.other_ns) * 1e-3), 9, true);
    if (any_gpu)
      s << pad(st.gpu_busy_ns >= 0 && st.wall_ns > 0
                   ? fmt("%.1f%%", 100.0 * double(st.gpu_busy_ns) / double(st.wall_ns))
                   : "-",
               10, true);
    s << "\n";
  }
}

// One rank's line of GPU time and what follows it: launches, idle causes, kernel types, top kernels.
void rank_gpu_text(std::ostringstream& s, const json& jr) {
  const json& g = jr["gpu"];
  const double w = g["window_us"].get<double>();
  auto pct = [&](const char* k) { return w > 0 ? fmt("%.1f%%", 100.0 * g[k].get<double>() / w) : std::string("-"); };
  s << "rank " << jr["rank"] << ": window " << fmt("%.3f", w * 1e-3) << " ms: compute " << pct("compute_us")
    << ", non-compute " << pct("non_compute_us") << ", idle " << pct("idle_us");
  if (!jr["comm_comp_overlap_pct"].is_null())
    s << "; communication overlapped by computation " << fmt("%.1f%%", jr["comm_comp_overlap_pct"].get<double>());
  if (jr.contains("launch") && jr["launch"]["launches"].get<int64_t>() > 0) {
    const json& l = jr["launch"];
    s << "\n  launches: " << l["launches"].get<int64_t>() << ", CPU "
      << fmt("%.3f", l["cpu_launch_us"].get<double>() * 1e-3) << " ms against GPU "
      << fmt("%.3f", l["gpu_us"].get<double>() * 1e-3) << " ms; mean launch delay "
      << fmt("%.1f", l["mean_launch_delay_us"].get<double>()) << " us; "
      << l["kernels_shorter_than_launch"].get<int64_t>() << " kernels shorter than their launch";
  }
  const json& idle = jr["idle_by_cause_us"];
  s << "\n  idle by cause (per stream, summed; ms): host wait " << fmt("%.3f", idle["host_wait"].get<double>() * 1e-3)
    << ", kernel wait " << fmt("%.3f", idle["kernel_wait"].get<double>() * 1e-3) << ", other "
    << fmt("%.3f", idle["other"].get<double>() * 1e-3);
  s << "\n  kernel types (ms):";
  for (const auto& [type, v] : jr["kernel_types_us"].items())
    s << " " << type << " " << fmt("%.3f", v.get<double>() * 1e-3);
  s << "\n  top kernels:\n";
  for (const auto& k : jr["top_kernels"])
    s << "    " << pad(k["name"].get<std::string>(), 60) << pad(k["type"].get<std::string>(), 14, true)
      << pad(std::to_string(k["calls"].get<int64_t>()), 8, true)
      << pad(fmt("%.3f ms", k["total_us"].get<double>() * 1e-3), 14, true) << "\n";
}

void gpu_text(std::ostringstream& s, const json& ranks, bool any_gpu) {
  s << "\nGPU time per rank (as Holistic Trace Analysis defines it)\n";
  if (!any_gpu) {
    s << "no GPU events in these traces (kernels, copies, sets): the temporal breakdown, kernel types, top kernels "
         "and overlap are skipped\n";
    return;
  }
  for (const auto& jr : ranks) {
    if (jr["gpu"].is_null()) s << "rank " << jr["rank"] << ": no GPU events\n";
    else rank_gpu_text(s, jr);
  }
}

void memory_text(std::ostringstream& s, const json& ranks) {
  bool memory_header = false;
  for (const auto& jr : ranks) {
    const json& m = jr["memory"];
    if (m["cpu_peak_allocated_bytes"].is_null() && m["device_peak_allocated_bytes"].is_null()) continue;
    if (!memory_header) s << "\nMemory ([memory] events: peak allocated)\n";
    memory_header = true;
    s << "rank " << jr["rank"] << ":";
    if (!m["cpu_peak_allocated_bytes"].is_null())
      s << " CPU " << bytes_text(m["cpu_peak_allocated_bytes"].get<int64_t>());
    if (!m["device_peak_allocated_bytes"].is_null())
      s << " device " << bytes_text(m["device_peak_allocated_bytes"].get<int64_t>());
    s << "\n";
  }
}

}  // namespace

std::string run_text(const RunRecords& run, const json& analysis, const std::optional<PeakFlops>& peak,
                     GroupBy group_by, size_t top) {
  const bool any_gpu = run.any_gpu();
  std::ostringstream s;
  header_text(s, run, analysis["notes"]);
  s << "\n"
    << ops_text(run.ops, analysis["sort_by"].get<std::string>(), group_by, top, any_gpu,
                [&](const OpRow& r) -> std::optional<double> {
                  const json f = peak_fraction(peak, r);
                  return f.is_null() ? std::nullopt : std::optional<double>(f.get<double>());
                });
  if (!analysis["roofline"].is_null()) roofline_text(s, analysis["roofline"], top);
  steps_text(s, run, any_gpu);
  gpu_text(s, analysis["ranks"], any_gpu);
  memory_text(s, analysis["ranks"]);
  s << "\nFindings\n";
  for (const auto& f : analysis["findings"]) s << "- " << f.get<std::string>() << "\n";
  return s.str();
}

}  // namespace tach::analyze
