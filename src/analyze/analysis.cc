// analyze_traces: each trace loaded, reduced to its op rows, steps, GPU time and memory peaks,
// and dropped before the next, so memory holds one trace's compact records at a time.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analyze/analysis.h"
#include "analyze/diagnosis.h"
#include "analyze/gpu_time.h"
#include "analyze/op_averages.h"
#include "analyze/roofline.h"
#include "analyze/steps.h"
#include "analyze/trace.h"
#include "tach/analyze.h"
#include "tach/error.h"
#include "tach/profile.h"

namespace tach {
namespace {

namespace fs = std::filesystem;
// Ordered: analysis.json lists each object's fields in the order docs/cli.md gives them.
using json = nlohmann::ordered_json;
using namespace tach::analyze;

bool is_json_name(const std::string& name) {
  auto ends = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

std::vector<std::string> expand(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      // tensorboard_trace_handler's files where there are any (*.pt.trace.json[.gz]: other JSON
      // beside them is not a trace), else every JSON file.
      std::vector<std::string> inside, handler;
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || !is_json_name(name)) continue;
        inside.push_back(entry.path().string());
        if (name.find(".pt.trace.json") != std::string::npos) handler.push_back(entry.path().string());
      }
      if (!handler.empty()) inside = handler;
      std::sort(inside.begin(), inside.end());
      check(!inside.empty(), p + ": no trace files (*.json, *.json.gz) in this directory");
      files.insert(files.end(), inside.begin(), inside.end());
    } else {
      check(fs::exists(p, ec), p + ": no such file or directory");
      files.push_back(p);
    }
  }
  check(!files.empty(), "no trace given");
  // One file twice would count each of its events twice (or, by its rank, refuse as two claims).
  std::map<std::string, std::string> seen;  // canonical path: the path as given
  for (const auto& f : files) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(f, ec);
    const auto [it, fresh] = seen.emplace(ec ? f : canonical.string(), f);
    check(fresh, f + (it->second == f ? "" : " (" + it->second + ")") + " is given twice: give each trace once");
  }
  return files;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double us(int64_t ns) { return double(ns) * 1e-3; }

struct RankState {
  int rank = 0;
  std::optional<GpuTime> gpu;  // summed over the rank's traces
  std::map<std::string, KernelStat> kernels;
  int64_t comm_ns = 0, overlapped_ns = 0;
  int64_t cpu_peak_allocated = -1, device_peak_allocated = -1;
  std::vector<std::string> files;
  std::vector<int64_t> step_walls_ns;
  int64_t base_time_ns = 0;
};

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct FileSpan {
  std::string path;
  int rank;
  bool rank_assumed;  // the trace names no rank
  int64_t first_ns, last_ns;
};

void add_gpu(RankState& r, const GpuTime& g) {
  if (!r.gpu) r.gpu = GpuTime{};
  r.gpu->window_ns += g.window_ns;
  r.gpu->idle_ns += g.idle_ns;
  r.gpu->compute_ns += g.compute_ns;
  r.gpu->non_compute_ns += g.non_compute_ns;
  r.gpu->kernels += g.kernels;
  r.gpu->launches += g.launches;
  LaunchStats& l = r.gpu->launch;
  l.launches += g.launch.launches;
  l.cpu_ns += g.launch.cpu_ns;
  l.gpu_ns += g.launch.gpu_ns;
  l.delay_ns += g.launch.delay_ns;
  l.shorter_than_launch += g.launch.shorter_than_launch;
  l.runtime_outliers += g.launch.runtime_outliers;
  l.delay_outliers += g.launch.delay_outliers;
  r.gpu->idle_by_cause.host_wait_ns += g.idle_by_cause.host_wait_ns;
  r.gpu->idle_by_cause.kernel_wait_ns += g.idle_by_cause.kernel_wait_ns;
  r.gpu->idle_by_cause.other_ns += g.idle_by_cause.other_ns;
  r.gpu->short_launches += g.short_launches;
  for (const auto& [type, ns] : g.kernel_types_ns) r.gpu->kernel_types_ns[type] += ns;
}

std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string bytes_text(int64_t b) {
  const double a = double(b < 0 ? -b : b);
  const std::string sign = b < 0 ? "-" : "";
  if (a >= 1024.0 * 1024 * 1024) return sign + fmt("%.2f GiB", a / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return sign + fmt("%.2f MiB", a / (1024.0 * 1024));
  if (a >= 1024.0) return sign + fmt("%.1f KiB", a / 1024.0);
  return sign + fmt("%.0f B", a);
}

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

}  // namespace

std::vector<std::string> analyze_sort_columns() { return analyze::sort_columns(); }

namespace analyze {

RunAnalysis analyse_run(const std::vector<std::string>& paths, const AnalyzeOptions& options) {
  const GroupBy group_by = parse_group_by(options.group_by);
  if (!options.sort_by.empty()) {
    std::vector<OpRow> none;
    sort_rows(none, options.sort_by);  // a usage error for an unknown column, before any reading
  }
  // A directory is one run (tensorboard_trace_handler writes one per run): beside other paths it
  // would be summed with another run's traces, so it is refused rather than summed.
  if (paths.size() > 1)
    for (const auto& p : paths) {
      std::error_code ec;
      check(!fs::is_directory(p, ec),
            p + ": a directory is one run, and " + std::to_string(paths.size()) +
                " paths were given to analyse as one run; give one directory, or the trace files of one run "
                "(together one run), or compare two runs (tach analyze BASELINE_DIR NEW_DIR, or --compare A B)");
    }
  RunAnalysis out;
  out.files = expand(paths);
  std::vector<OpRow> ops;
  json steps = json::array(), traces = json::array(), notes = json::array();
  std::map<int, RankState> ranks;
  std::vector<FileSpan> spans;
  std::vector<std::pair<std::string, StepRow>> step_rows;
  json device_properties = json::array();
  std::map<std::string, NameCost> costs;  // the roofline's bytes and FLOPs per op name
  for (const auto& file : out.files) {
    const Trace t = load_trace(file);
    add_trace_costs(t, costs);
    const int rank = t.rank.value_or(0);
    if (!t.rank) notes.push_back(file + ": " + t.rank_assumed_because() + "; rank 0 assumed");
    if (t.cpu.empty() && t.device.empty() && t.memory.empty())
      notes.push_back(file + ": no event tach reads (CPU ops, annotations, kernels, copies, sets, [memory]): " +
                      "nothing of this trace is in the tables");
    std::vector<OpRow> trace_ops = op_averages(t, group_by);
    // Several traces are several processes (or profiling cycles): their Python frames are matched
    // without the object addresses that differ between them (one trace keeps torch's own keys).
    if (out.files.size() > 1)
      for (auto& r : trace_ops)
        for (auto& f : r.stack) f = stable_frame(f);
    merge_rows(ops, trace_ops);
    RankState& r = ranks[rank];
    const std::vector<StepRow> trace_steps = step_breakdown(t);
    for (const auto& s : trace_steps) {
      step_rows.emplace_back(file, s);
      r.step_walls_ns.push_back(s.wall_ns);
    }
    // gpu_time keeps, as HTA does, what was launched before the last of two or more steps began.
    out.kernel_steps += trace_steps.size() >= 2 ? trace_steps.size() - 1 : trace_steps.size();
    if (t.base_time_ns) r.base_time_ns = t.base_time_ns;
    r.rank = rank;
    r.files.push_back(file);
    if (const auto g = gpu_time(t, 1 << 20)) {
      add_gpu(r, *g);
      for (const auto& k : g->top_kernels) {
        KernelStat& m = r.kernels[k.name];
        if (m.calls == 0) {
          m = k;
        } else {
          m.calls += k.calls;
          m.total_ns += k.total_ns;
          m.min_ns = std::min(m.min_ns, k.min_ns);
          m.max_ns = std::max(m.max_ns, k.max_ns);
        }
      }
      if (g->comm_comp_overlap_pct) {
        const int64_t comm = g->kernel_types_ns.count("COMMUNICATION") ? g->kernel_types_ns.at("COMMUNICATION") : 0;
        r.comm_ns += comm;
        r.overlapped_ns += int64_t(double(comm) * *g->comm_comp_overlap_pct / 100.0);
      }
    }
    for (const auto& m : t.memory) {
      const bool cpu = m.device_type == 0 || m.device_type == 2 || m.device_type == 5;
      int64_t& peak = cpu ? r.cpu_peak_allocated : r.device_peak_allocated;
      peak = std::max(peak, m.total_allocated);
    }
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& e : t.cpu) first = std::min(first, e.start_ns), last = std::max(last, e.end_ns);
    for (const auto& d : t.device) first = std::min(first, d.start_ns), last = std::max(last, d.end_ns);
    if (first <= last) {
      for (const auto& other : spans)
        check(other.rank != rank || other.last_ns <= first || last <= other.first_ns,
              other.path + " and " + file + " both claim rank " + std::to_string(rank) + " over the same time: " +
                  (other.rank_assumed || !t.rank
                       ? "traces of different ranks need distributedInfo (torch.distributed initialised before "
                         "profiling), or analyse them one at a time"
                       : "both name it in their distributedInfo, so they come from two runs; analyse them one at a "
                         "time, or compare them (tach analyze BASELINE NEW)"));
      spans.push_back({file, rank, !t.rank.has_value(), first, last});
    }
    if (device_properties.empty() && !t.device_properties.empty())
      device_properties =
          json::parse(t.device_properties.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    traces.push_back({{"path", file},
                      {"rank", rank},
                      {"rank_assumed", !t.rank.has_value()},
                      {"rank_assumed_because", t.rank ? json(nullptr) : json(t.rank_assumed_because())},
                      {"world_size", t.world_size},
                      {"cpu_events", t.cpu.size()},
                      {"device_events", t.device.size()},
                      {"memory_events", t.memory.size()},
                      {"base_time_ns", t.base_time_ns}});
  }
  if (out.files.size() > 1) {
    // Several traces sum into one run's tables: say so, and which trace is which rank's.
    std::string which = std::to_string(out.files.size()) + " traces analysed as one run (their tables summed):";
    for (const auto& [rank, r] : ranks) {
      which += " rank " + std::to_string(rank) + ":";
      for (size_t i = 0; i < r.files.size(); ++i) which += (i ? ", " : " ") + r.files[i];
      which += ";";
    }
    which.back() = '.';
    if (paths.size() > 1) which += " tach analyze --compare A B compares two runs.";
    notes.insert(notes.begin(), which);
  }
  const bool any_gpu =
      std::any_of(ranks.begin(), ranks.end(), [](const auto& kv) { return kv.second.gpu.has_value(); });
  const std::string sort_by = !options.sort_by.empty() ? options.sort_by : any_gpu ? "self_device" : "self_cpu";
  sort_rows(ops, sort_by);

  json j;
  j["schema"] = "tach.analysis/1";
  j["traces"] = traces;
  j["notes"] = notes;
  j["group_by"] = options.group_by;
  j["sort_by"] = sort_by;
  j["device_properties"] = device_properties;
  // The roofline's compute side: a GPU trace's ops against the published peak of the GPU its
  // deviceProperties name, a CPU trace's against this machine's cached GEMM ceilings.
  std::optional<PeakFlops> peak;
  json roofline = nullptr;
  if (any_gpu) {
    for (const auto& d : device_properties)
      if (!peak && d.contains("name") && d["name"].is_string()) peak = published_peak(d["name"].get<std::string>());
    if (peak)
      roofline = {{"device", peak->device},
                  {"f32_flops", peak->f32},
                  {"tf32_flops", peak->tf32},
                  {"bf16_flops", peak->bf16},
                  {"source", peak->source},
                  {"memory_bytes_per_s", peak->bytes_per_s},
                  {"memory_source", peak->bandwidth_source}};
    else {
      std::string names;
      for (const auto& d : device_properties)
        if (d.contains("name") && d["name"].is_string() &&
            names.find(d["name"].get<std::string>()) == std::string::npos)
          names += (names.empty() ? "" : ", ") + d["name"].get<std::string>();
      notes.push_back("no published peak for " + (names.empty() ? std::string("this GPU") : names) +
                      " (deviceProperties' name; the table holds H200, H100, A100, L40S, L4, A10 and V100): no "
                      "roofline");
    }
  } else if (!device_properties.empty()) {
    // A GPU run whose trace kept no kernels: its ops' CPU times are the host launching them, which
    // neither the GPU's peaks nor this machine's judge.
    notes.push_back(
        "deviceProperties name a GPU but the traces hold no kernels: the ops' times are the host's "
        "launches, so no roofline");
  } else if (const auto c = cached_machine_ceilings()) {
    const std::string source = "tach info --ceilings: " + describe_ceilings_provenance(*c);
    peak = PeakFlops{c->cpu,
                     c->gemm_f32_flops,
                     c->gemm_f32_flops,
                     c->gemm_bf16_flops,
                     source,
                     c->memory_bytes_per_s,
                     "tach info --ceilings (STREAM triad): " + describe_ceilings_provenance(*c)};
    roofline = {
        {"device", c->cpu},       {"f32_flops", c->gemm_f32_flops},          {"bf16_flops", c->gemm_bf16_flops},
        {"source", peak->source}, {"memory_bytes_per_s", peak->bytes_per_s}, {"memory_source", peak->bandwidth_source}};
  } else {
    notes.push_back("no measured CPU ceilings on this machine (tach info --ceilings measures them): no roofline");
  }
  // The memory side: each op the cost model takes (op_cost.h), its bytes against the bandwidth.
  if (!roofline.is_null()) roofline["ops"] = roofline_ops(ops, costs, *peak);
  j["notes"] = notes;
  j["roofline"] = roofline;
  auto peak_fraction = [&](const OpRow& r) -> json {
    const int64_t time_ns = r.device_ns > 0 ? r.device_ns : r.cpu_ns;
    if (!peak || r.flops <= 0 || time_ns <= 0) return nullptr;
    const double rate = double(r.flops) / (double(time_ns) * 1e-9);
    const double ceiling = peak_at(*peak, r.precision);
    return ceiling > 0 ? json(rate / ceiling) : json(nullptr);
  };
  json jops = json::array();
  for (const auto& r : ops) {
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
        {"peak_fraction", peak_fraction(r)},
        {"self_cpu_memory_bytes", r.self_cpu_memory},
        {"cpu_memory_bytes", r.cpu_memory}};
    if (group_by == GroupBy::shape) o["input_shapes"] = r.shapes;
    if (group_by == GroupBy::stack) o["stack"] = r.stack;
    jops.push_back(std::move(o));
  }
  j["ops"] = std::move(jops);
  for (const auto& [file, s] : step_rows) {
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
  }
  j["steps"] = steps;
  json jranks = json::array();
  for (auto& [rank, r] : ranks) {
    json o = {{"rank", rank},
              {"traces", r.files},
              {"step_median_us", r.step_walls_ns.empty() ? json(nullptr) : json(us(median(r.step_walls_ns)))},
              {"base_time_ns", r.base_time_ns}};
    if (r.gpu) {
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
      json top = json::array();
      for (size_t i = 0; i < ks.size() && i < options.top; ++i)
        top.push_back({{"name", ks[i].name},
                       {"type", kernel_type_name(ks[i].type)},
                       {"calls", ks[i].calls},
                       {"total_us", us(ks[i].total_ns)},
                       {"mean_us", us(ks[i].total_ns) / double(ks[i].calls)},
                       {"min_us", us(ks[i].min_ns)},
                       {"max_us", us(ks[i].max_ns)}});
      o["top_kernels"] = top;
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
    jranks.push_back(std::move(o));
  }
  j["ranks"] = jranks;

  DiagnosisInput d;
  for (const auto& [file, st] : step_rows) {
    d.step_wall_ns += st.wall_ns;
    d.step_dataloader_ns += st.dataloader_ns;
  }
  for (const auto& [rank, r] : ranks) {
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
  if (!roofline.is_null()) {
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
  if (any_gpu) {
    // f32 GEMMs by the ops' input types; CUDA-core GEMMs by the kernels' names.
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
    for (const auto& [rank, r] : ranks)
      for (const auto& [name, k] : r.kernels) {
        if (!is_cuda_core_gemm_kernel(name)) continue;
        d.cuda_core_gemm_ns += k.total_ns;
        if (k.total_ns > longest) longest = k.total_ns, d.cuda_core_gemm_kernel = name;
      }
    // cuBLAS names run to 150 characters: the part that says what it is.
    if (d.cuda_core_gemm_kernel.size() > 48) d.cuda_core_gemm_kernel = d.cuda_core_gemm_kernel.substr(0, 45) + "...";
  }
  json findings = json::array();
  for (const auto& f : diagnose(d)) {
    if (f == "no bottleneck stands out by these rules" && ranks.size() > 1) continue;  // stragglers below
    findings.push_back(f);
  }
  // Stragglers: a rank whose median step is 10% or more above the median of the ranks' medians
  // (every rank waits for it at each collective).
  std::vector<int64_t> medians;
  for (const auto& [rank, r] : ranks)
    if (!r.step_walls_ns.empty()) medians.push_back(median(r.step_walls_ns));
  if (medians.size() > 1) {
    const int64_t all = median(medians);
    for (const auto& [rank, r] : ranks) {
      if (r.step_walls_ns.empty() || all <= 0) continue;
      const int64_t m = median(r.step_walls_ns);
      if (m * 10 >= all * 11)
        findings.push_back("straggler: rank " + std::to_string(rank) + "'s median step, " + fmt("%.3f", us(m) * 1e-3) +
                           " ms, is " + fmt("%.0f%%", 100.0 * double(m - all) / double(all)) +
                           " above the ranks' median; the others wait for it at every collective");
    }
  }
  if (findings.empty()) findings.push_back("no bottleneck stands out by these rules");
  j["findings"] = findings;
  out.gpu = any_gpu;
  out.ops = ops;
  for (const auto& [file, st] : step_rows) out.step_walls_ms.push_back(us(st.wall_ns) * 1e-3);
  for (const auto& [rank, r] : ranks)
    for (const auto& [name, k] : r.kernels) {
      KernelStat& m = out.kernels[name];
      if (m.calls == 0) {
        m = k;
      } else {
        m.calls += k.calls;
        m.total_ns += k.total_ns;
        m.min_ns = std::min(m.min_ns, k.min_ns);
        m.max_ns = std::max(m.max_ns, k.max_ns);
      }
    }

  // The terminal report.
  std::ostringstream s;
  s << "tach analyze: " << out.files.size() << " trace" << (out.files.size() == 1 ? "" : "s") << ", " << ranks.size()
    << " rank" << (ranks.size() == 1 ? "" : "s") << "\n";
  for (const auto& n : notes) s << "note: " << n.get<std::string>() << "\n";
  if (ranks.size() > 1) {
    // Each rank's trace clock starts at its own baseTimeNanoseconds; what they differ by is said,
    // not corrected (torch writes no synchronised clock).
    const int64_t base0 = ranks.begin()->second.base_time_ns;
    std::string offsets;
    for (const auto& [rank, r] : ranks)
      if (r.base_time_ns && base0 && r.base_time_ns != base0)
        offsets += " rank " + std::to_string(rank) + " " + fmt("%+.3f", double(r.base_time_ns - base0) * 1e-6) + " ms;";
    if (!offsets.empty())
      s << "clock offsets (baseTimeNanoseconds against rank " << ranks.begin()->first << "):" << offsets << "\n";
  }
  s << "\n"
    << ops_text(ops, sort_by, group_by, options.top, any_gpu, [&](const OpRow& r) -> std::optional<double> {
         const json f = peak_fraction(r);
         return f.is_null() ? std::nullopt : std::optional<double>(f.get<double>());
       });
  if (!roofline.is_null()) {
    s << "% peak: FLOP/s against " << roofline["device"].get<std::string>() << " ("
      << roofline["source"].get<std::string>() << "), at each op's precision\n";
    s << "\nRoofline (bytes moved from the recorded shapes and dtypes; memory "
      << fmt("%.1f GB/s", roofline["memory_bytes_per_s"].get<double>() * 1e-9) << ", "
      << roofline["memory_source"].get<std::string>() << ")\n";
    if (roofline["ops"].empty()) {
      s << "no op whose bytes the shapes give (record_shapes=True records them; mm, addmm, bmm, linear, "
           "attention, elementwise ops, softmax and layer_norm are costed)\n";
    } else {
      s << pad("name", 44) << pad("calls", 8, true) << pad("ms", 10, true) << pad("FLOP/byte", 11, true)
        << pad("ridge", 8, true) << pad("GFLOP/s", 10, true) << pad("GB/s", 9, true) << pad("% peak", 8, true)
        << pad("% bw", 7, true) << "  bound\n";
      size_t n = 0;
      bool above_bandwidth = false;
      for (const auto& o : roofline["ops"]) {
        if (n++ == options.top) break;
        s << pad(o["name"].get<std::string>(), 44) << pad(std::to_string(o["calls"].get<int64_t>()), 8, true)
          << pad(fmt("%.3f", o["time_us"].get<double>() * 1e-3), 10, true)
          << pad(fmt("%.2f", o["intensity"].get<double>()), 11, true)
          << pad(fmt("%.1f", o["ridge"].get<double>()), 8, true)
          << pad(fmt("%.2f", o["flops_per_s"].get<double>() * 1e-9), 10, true)
          << pad(fmt("%.2f", o["bytes_per_s"].get<double>() * 1e-9), 9, true)
          << pad(o["peak_fraction"].is_null() ? "-" : fmt("%.1f", o["peak_fraction"].get<double>() * 100), 8, true)
          << pad(fmt("%.1f", o["bandwidth_fraction"].get<double>() * 100), 7, true) << "  "
          << o["bound"].get<std::string>() << (o["bandwidth_fraction"].get<double>() > 1 ? "*" : "") << "\n";
        above_bandwidth |= o["bandwidth_fraction"].get<double>() > 1;
      }
      if (above_bandwidth)
        s << "* moved its bytes faster than the memory bandwidth: they came from the caches (its tensors fit in "
             "them), so the bandwidth is no ceiling for it\n";
    }
  }
  s << "\nSteps (ProfilerStep#N; ms)\n";
  if (step_rows.empty()) {
    s << "no ProfilerStep#N spans in these traces (torch.profiler's schedule and prof.step() write them)\n";
  } else {
    s << pad("trace", 36) << pad("step", 6, true) << pad("wall", 10, true) << pad("data", 9, true)
      << pad("forward", 9, true) << pad("backward", 10, true) << pad("optim", 9, true) << pad("other", 9, true)
      << (any_gpu ? pad("GPU busy", 10, true) : "") << "\n";
    for (const auto& [file, st] : step_rows) {
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
  s << "\nGPU time per rank (as Holistic Trace Analysis defines it)\n";
  if (!any_gpu) {
    s << "no GPU events in these traces (kernels, copies, sets): the temporal breakdown, kernel types, top kernels "
         "and overlap are skipped\n";
  } else {
    for (const auto& jr : j["ranks"]) {
      if (jr["gpu"].is_null()) {
        s << "rank " << jr["rank"] << ": no GPU events\n";
        continue;
      }
      const json& g = jr["gpu"];
      const double w = g["window_us"].get<double>();
      auto pct = [&](const char* k) {
        return w > 0 ? fmt("%.1f%%", 100.0 * g[k].get<double>() / w) : std::string("-");
      };
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
      s << "\n  idle by cause (per stream, summed; ms): host wait "
        << fmt("%.3f", idle["host_wait"].get<double>() * 1e-3) << ", kernel wait "
        << fmt("%.3f", idle["kernel_wait"].get<double>() * 1e-3) << ", other "
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
  }
  bool memory_header = false;
  for (const auto& jr : j["ranks"]) {
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
  s << "\nFindings\n";
  for (const auto& f : j["findings"]) s << "- " << f.get<std::string>() << "\n";
  out.text = s.str();
  out.json = std::move(j);
  return out;
}

std::string analysis_json_text(const nlohmann::ordered_json& j) {
  // Names are the trace's bytes: invalid UTF-8 is replaced (U+FFFD) rather than refused.
  return j.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace analyze

TraceAnalysis analyze_traces(const std::vector<std::string>& paths, const AnalyzeOptions& options) {
  analyze::RunAnalysis run = analyze::analyse_run(paths, options);
  return {run.files, analyze::analysis_json_text(run.json), run.text};
}

}  // namespace tach
