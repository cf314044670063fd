// read_run: each trace loaded, reduced to its op rows, steps, GPU time and memory peaks, and
// dropped before the next, so memory holds one trace's compact records at a time.
#include "analyze/run_records.h"

#include <algorithm>
#include <climits>

#include "analyze/trace.h"
#include "tach/error.h"

namespace tach::analyze {

namespace {

using json = nlohmann::ordered_json;

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

// The trace's GPU time, kernels, communication overlap and memory peaks into its rank's state.
void add_rank_figures(RankState& r, const Trace& t) {
  if (const auto g = gpu_time(t, 1 << 20)) {
    add_gpu(r, *g);
    for (const auto& k : g->top_kernels) merge_kernel(r.kernels, k);
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
}

// The trace's time span on its rank, refused where another trace of that rank covers it too.
void claim_span(RunRecords& run, const Trace& t, const std::string& file, int rank) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& e : t.cpu) first = std::min(first, e.start_ns), last = std::max(last, e.end_ns);
  for (const auto& d : t.device) first = std::min(first, d.start_ns), last = std::max(last, d.end_ns);
  if (first > last) return;
  for (const auto& other : run.spans)
    check(other.rank != rank || other.last_ns <= first || last <= other.first_ns,
          other.path + " and " + file + " both claim rank " + std::to_string(rank) + " over the same time: " +
              (other.rank_assumed || !t.rank
                   ? "traces of different ranks need distributedInfo (torch.distributed initialised before "
                     "profiling), or analyse them one at a time"
                   : "both name it in their distributedInfo, so they come from two runs; analyse them one at a "
                     "time, or compare them (tach analyze BASELINE NEW)"));
  run.spans.push_back({file, rank, !t.rank.has_value(), first, last});
}

void read_trace(RunRecords& run, const std::string& file, GroupBy group_by) {
  const Trace t = load_trace(file);
  add_trace_costs(t, run.costs);
  const int rank = t.rank.value_or(0);
  if (!t.rank) run.notes.push_back(file + ": " + t.rank_assumed_because() + "; rank 0 assumed");
  if (t.cpu.empty() && t.device.empty() && t.memory.empty())
    run.notes.push_back(file + ": no event tach reads (CPU ops, annotations, kernels, copies, sets, [memory]): " +
                        "nothing of this trace is in the tables");
  std::vector<OpRow> trace_ops = op_averages(t, group_by);
  // Several traces are several processes (or profiling cycles): their Python frames are matched
  // without the object addresses that differ between them (one trace keeps torch's own keys).
  if (run.files.size() > 1)
    for (auto& r : trace_ops)
      for (auto& f : r.stack) f = stable_frame(f);
  merge_rows(run.ops, trace_ops);
  RankState& r = run.ranks[rank];
  const std::vector<StepRow> trace_steps = step_breakdown(t);
  for (const auto& s : trace_steps) {
    run.step_rows.emplace_back(file, s);
    r.step_walls_ns.push_back(s.wall_ns);
  }
  // gpu_time keeps, as HTA does, what was launched before the last of two or more steps began.
  run.kernel_steps += trace_steps.size() >= 2 ? trace_steps.size() - 1 : trace_steps.size();
  if (t.base_time_ns) r.base_time_ns = t.base_time_ns;
  r.rank = rank;
  r.files.push_back(file);
  add_rank_figures(r, t);
  claim_span(run, t, file, rank);
  if (run.device_properties.empty() && !t.device_properties.empty())
    run.device_properties =
        json::parse(t.device_properties.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  run.traces.push_back({{"path", file},
                        {"rank", rank},
                        {"rank_assumed", !t.rank.has_value()},
                        {"rank_assumed_because", t.rank ? json(nullptr) : json(t.rank_assumed_because())},
                        {"world_size", t.world_size},
                        {"cpu_events", t.cpu.size()},
                        {"device_events", t.device.size()},
                        {"memory_events", t.memory.size()},
                        {"base_time_ns", t.base_time_ns}});
}

}  // namespace

bool RunRecords::any_gpu() const {
  return std::any_of(ranks.begin(), ranks.end(), [](const auto& kv) { return kv.second.gpu.has_value(); });
}

RunRecords read_run(const std::vector<std::string>& files, GroupBy group_by, bool several_paths) {
  RunRecords run;
  run.files = files;
  for (const auto& file : files) read_trace(run, file, group_by);
  if (files.size() > 1) {
    // Several traces sum into one run's tables: say so, and which trace is which rank's.
    std::string which = std::to_string(files.size()) + " traces analysed as one run (their tables summed):";
    for (const auto& [rank, r] : run.ranks) {
      which += " rank " + std::to_string(rank) + ":";
      for (size_t i = 0; i < r.files.size(); ++i) which += (i ? ", " : " ") + r.files[i];
      which += ";";
    }
    which.back() = '.';
    if (several_paths) which += " tach analyze --compare A B compares two runs.";
    run.notes.insert(run.notes.begin(), which);
  }
  return run;
}

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void merge_kernel(std::map<std::string, KernelStat>& into, const KernelStat& k) {
  KernelStat& m = into[k.name];
  if (m.calls == 0) {
    m = k;
  } else {
    m.calls += k.calls;
    m.total_ns += k.total_ns;
    m.min_ns = std::min(m.min_ns, k.min_ns);
    m.max_ns = std::max(m.max_ns, k.max_ns);
  }
}

}  // namespace tach::analyze
