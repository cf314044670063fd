// The findings of a sweep in words (summary.txt) and as data (summary.json).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cpu/gemm.h"
#include "cpu/train_gemm.h"
#include "report/batch_plateau.h"
#include "report/engine_report.h"
#include "report/number_text.h"
#include "tach/parameter_count.h"
#include "tach/error.h"
#include "tach/report.h"
#include "tach/stats.h"
#include "tach/system_info.h"

namespace tach {

namespace {

using report::fmt;

// A batch series: every axis but the batch, with the threads the points ran with (a resumed run's
// earlier points may have run with another default).
std::string group_of(const PointResult& p) {
  // Another engine's points form their own series (tach's allocator does not count their memory).
  return (p.key.engine == "tach" ? std::string() : p.key.engine + " ") + p.key.device + " " + p.key.dtype +
         " threads " + threads_label(p) + " seq " + std::to_string(p.key.seq_len);
}

// Bytes the forward needs beyond the weights: the allocator's activation and workspace peaks.
double working_bytes(const PointResult& p) {
  double b = 0;
  for (const char* c : {"activations", "workspace"})
    if (auto it = p.allocator.find(c); it != p.allocator.end()) b += double(it->second.peak);
  return b;
}

void write_atomically(const std::filesystem::path& target, const std::string& text) {
  const auto tmp = target.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    check(static_cast<bool>(out), tmp + ": cannot write");
    out << text;
    check(static_cast<bool>(out.flush()), tmp + ": write failed (disk full?)");
  }
  std::filesystem::rename(tmp, target);
}

std::vector<TrainDiagnosis> diagnose(const BenchConfig& config, const SweepOutcome& o) {
  return diagnose_training(o.results, estimator_for(config.model), cpu::bf16_gemm_in_hardware());
}

// A training sweep's findings: the contention first (it qualifies every other finding), then the
// diagnosis per series (performance_report.md has the tables).
std::string train_findings_text(const BenchConfig& config, const SweepOutcome& o, const std::string& contention) {
  std::ostringstream s;
  s << "Findings (performance_report.md has them with every point's phases, MFU and memory)\n" << contention;
  for (const auto& d : diagnose(config, o)) {
    s << "- " << d.series << ":\n";
    for (const auto& f : d.findings) s << "    " << f << "\n";
    for (const auto& a : d.advice) s << "    To do: " << a << "\n";
  }
  for (const auto& p : o.results)
    if (p.status != "ok") s << "- " << p.key.id() << " " << p.status << ": " << p.reason << "\n";
  s << "\nMeasurement overhead: one steady-clock reading costs "
    << fmt("%.0f", o.results.empty() ? 0 : o.results.front().timer_overhead_ns) << " ns; appending a result line "
    << "(with fsync) took " << fmt("%.2f", o.result_write_ms_median) << " ms (median), outside every timing.\n";
  s << "\nNext steps\n- Compare settings: tach compare RUN --by exec (or gradient_checkpointing, method, dtype) within "
       "this run, or tach compare RUN_A RUN_B across runs.\n- Ask where a step's time goes: tach profile --train -m "
    << config.model << " -b B -s T.\n- tach report " << o.run_dir << " draws the curves (report.html).\n";
  return s.str();
}

}  // namespace

std::vector<BatchFinding> batch_findings(const std::vector<PointResult>& results, double latency_budget_ms,
                                         const DeviceLimitsLookup& limits) {
  std::map<std::string, std::vector<const PointResult*>> groups, not_run;
  std::vector<std::string> order;
  for (const auto& p : results) {
    if (p.status != "ok") {
      not_run[group_of(p)].push_back(&p);
      continue;
    }
    const std::string g = group_of(p);
    if (!groups.count(g)) order.push_back(g);
    groups[g].push_back(&p);
  }
  std::vector<BatchFinding> out;
  for (const auto& g : order) {
    BatchFinding f;
    f.group = g;
    const auto& pts = groups[g];
    f.points = int(pts.size());
    for (const PointResult* p : pts) {
      f.contended_points += p->load.contended;
      if (p->samples_per_s > f.best_samples_per_s) {
        f.best_samples_per_s = p->samples_per_s;
        f.best_batch = p->key.batch;
      }
      if (latency_budget_ms > 0 && p->batch_latency_ms.p95 <= latency_budget_ms &&
          p->samples_per_s > f.best_in_budget_samples_per_s) {
        f.best_in_budget_samples_per_s = p->samples_per_s;
        f.best_batch_in_budget = p->key.batch;
      }
    }
    // Least squares: working bytes = fixed + per_sample * batch.
    if (pts.size() >= 2) {
      double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
      const double n = double(pts.size());
      for (const PointResult* p : pts) {
        const double x = double(p->key.batch), y = working_bytes(*p);
        sx += x, sy += y, sxx += x * x, sxy += x * y, syy += y * y;
      }
      const double den = n * sxx - sx * sx;
      if (den > 0) {
        f.activation_bytes_per_sample = (n * sxy - sx * sy) / den;
        f.activation_bytes_fixed = (sy - f.activation_bytes_per_sample * sx) / n;
        const double cov = n * sxy - sx * sy, vy = n * syy - sy * sy;
        f.fit_r2 = vy > 0 ? cov * cov / (den * vy) : 1;
      }
    }
    report::find_plateau(f, pts, not_run[g], limits);
    out.push_back(f);
  }
  return out;
}

namespace {

// A causal LM's decoding (bench --decode-tokens): each point's median step against the bandwidth
// limit, and a warning where the steps beat it (the bandwidth figure is then too low).
void decode_findings(std::ostringstream& s, const std::vector<PointResult>& results) {
  for (const auto& p : results) {
    const PointResult::Decode& d = p.decode;
    if (p.status != "ok" || d.method.empty()) continue;
    s << "- " << p.key.id() << " decoding: ";
    if (d.step_ms.n == 0) {
      s << d.method << "\n";
      continue;
    }
    s << fmt("%.2f", d.step_ms.median) << " ms per step (median of " << d.step_ms.n << ", p90 "
      << fmt("%.2f", d.step_ms.p90) << "), " << fmt("%.1f", d.tokens_per_s) << " tokens/s; the limit is "
      << fmt("%.2f", d.limit_ms) << " ms (" << fmt("%.3f", (d.weight_bytes_per_step + d.cache_bytes_per_step) / 1e9)
      << " GB per step over " << fmt("%.1f", d.memory_bytes_per_s / 1e9) << " GB/s), so the median runs at "
      << fmt("%.0f", 100 * d.fraction_of_limit) << "% of it";
    if (d.read_limit_ms > 0)
      s << " (" << fmt("%.0f", 100 * d.fraction_of_read_limit) << "% of the read-only limit, "
        << fmt("%.2f", d.read_limit_ms) << " ms)";
    s << ".\n";
    if (!d.warning.empty()) s << "  " << d.warning << "\n";
  }
}

// The models loaded, a line each; with what each timed run covers (a sweep's, not an eval's).
void model_lines(std::ostringstream& s, const SweepOutcome& o, bool timed_runs) {
  const double MiB = 1024.0 * 1024.0;
  std::vector<std::string> said;  // a note once, though every device and dtype loaded the model
  for (const auto& m : o.models) {
    s << "model: " << m.architecture << ", " << parameter_count_text(m.parameters) << " parameters, weights "
      << m.weights_dtype
      << (m.memory_bytes ? ", " + fmt("%.1f", double(m.memory_bytes) / MiB) + " MiB in memory" : std::string())
      << (m.disk_bytes ? ", " + fmt("%.1f", double(m.disk_bytes) / MiB) + " MiB on disk" : std::string()) << "; "
      << m.source << "\n";
    if (timed_runs && !m.task.empty()) s << "each run times: " << m.task << "\n";
    for (const std::string& n : m.notes)
      if (std::find(said.begin(), said.end(), n) == said.end()) {
        said.push_back(n);
        s << "note: " << n << "\n";
      }
  }
}

// The threads the run ran with: its points' (the largest, where a sweep ran several), else the
// accuracy pass's, else (nothing ran in this process, none recorded) this process's default.
int run_threads(const SweepOutcome& o, int default_threads) {
  int most = 0;
  for (const auto& p : o.results) most = std::max(most, p.threads_used);
  return most ? most : o.accuracy_threads ? o.accuracy_threads : default_threads;
}

// tach eval's pass in words: summary.txt's method line, summary.json's "method", the report's.
std::string eval_method(const BenchConfig& c, const SweepOutcome& o) {
  const int asked = c.threads.size() == 1 ? c.threads.front() : 0;
  const int used = o.accuracy_threads ? o.accuracy_threads : asked;
  const std::string threads =
      used ? std::to_string(used) + (used == 1 ? " thread" : " threads") + (asked ? "" : " (the default)")
           : std::string("the default threads");
  return "the accuracy pass alone: texts tokenized and truncated to " + std::to_string(c.eval_max_length) +
         " tokens (never past the model's positions), in batches of " + std::to_string(c.eval_batch_size) +
         " padded to their longest" + (c.bucketing ? " (texts sorted by length)" : "") +
         ", each prediction the argmax of the logits; one pass per device and dtype, " + threads +
         "; wall-clock time, split into tokenization and the model";
}

// summary.txt of tach eval: the pass, its results per device and dtype, and what to try next.
std::string eval_summary_text(const BenchConfig& config, const SweepOutcome& o) {
  std::ostringstream s;
  s << "tach eval: " << config.model << "\n";
  s << "run directory: " << o.run_dir << "\n";
  model_lines(s, o, false);
  s << "method: " << eval_method(config, o) << ".\n\n";
  const bool synthetic = !o.models.empty() && o.models.front().synthetic_weights;
  s << accuracy_text(o.accuracy, o.accuracy_dataset, synthetic);
  s << "\nNext steps\n";
  if (config.dtypes.size() == 1)
    s << "- What a narrower dtype costs in accuracy: --dtype f32,int8,bf16 (a pass each, side by side).\n";
  s << "- Speed beside accuracy: tach bench -m MODEL --accuracy -d DATASET (the sweep, and this pass per dtype).\n";
  return s.str();
}

// Where the series' throughput stops growing, and why (report/batch_plateau.h has the rule).
void plateau_line(std::ostringstream& s, const BatchFinding& f) {
  if (f.points < 2) return;
  if (f.plateau_batch == 0) {
    s << "  Throughput still grows at the largest batch measured (each doubling gains "
      << fmt("%.0f", 100 * kPlateauGainPerDoubling) << "% or more): larger batches may give more.\n";
    return;
  }
  s << "  Throughput stops growing at batch " << f.plateau_batch;
  if (f.plateau_next_gain != 0 || f.plateau_bound != "memory")
    s << " (the next batch gains " << fmt("%.0f", 100 * f.plateau_next_gain) << "% per doubling, under "
      << fmt("%.0f", 100 * kPlateauGainPerDoubling) << "%)";
  s << ": " << f.plateau_why << ".\n";
}

// Points measured while other processes took cores their threads needed (PointResult::load): their
// figures are the shared machine's, however precise their stopping rule says they are.
void contention_findings(std::ostringstream& s, const std::vector<PointResult>& results) {
  std::vector<const PointResult*> contended;
  for (const auto& p : results)
    if (p.status == "ok" && p.load.measured && p.load.contended) contended.push_back(&p);
  if (contended.empty()) return;
  s << "- CONTENDED: " << contended.size() << " of " << results.size()
    << " points were measured while other processes used cores their threads needed, so their latencies and "
       "throughput are the shared machine's, not the model's; measure them again on a quiet machine (or with fewer "
       "--threads):\n";
  for (const PointResult* p : contended)
    s << "  " << p->key.id() << ": other processes used " << fmt("%.2f", p->load.other_cores_mean) << " cores (up to "
      << fmt("%.2f", p->load.other_cores_max) << "), load average " << fmt("%.2f", p->load.load_average_1m) << "\n";
}

}  // namespace
std::string summary_text(const BenchConfig& config, const SweepOutcome& o) {
  if (o.eval_only) return eval_summary_text(config, o);
  std::ostringstream s;
  const double MiB = 1024.0 * 1024.0;
  s << "tach bench: " << config.model << "\n";
  s << "run directory: " << o.run_dir << "\n";
  model_lines(s, o, true);
  int ok = 0, failed = 0;
  for (const auto& p : o.results) (p.status == "ok" ? ok : failed)++;
  s << "points: " << o.results.size() << " (" << ok << " ok, " << failed << " failed";
  if (o.resumed_points) s << ", " << o.resumed_points << " kept from before the resume";
  if (config.train.enabled) {
    s << "); each point: its own model, " << config.warmup_runs
      << (config.warmup_runs == 1 ? " warm-up step" : " warm-up steps") << " (not measured), then "
      << config.stop.describe()
      << ". Latencies are per optimizer step (data, forward with the loss, backward, clipping, AdamW; wall clock); "
         "throughput: "
      << kThroughputDefinition << " (here a step's); then one profiled step for the FLOPs.\n\n";
    std::ostringstream contention;
    contention_findings(contention, o.results);
    report::engine_findings(contention, o.results);  // other engines' losses against tach's, and their standing
    return s.str() + train_findings_text(config, o, contention.str());
  }
  s << "); each point: " << config.warmup_runs << " warm-up runs (not measured), then " << config.stop.describe()
    << ". Latencies are per batch, model forward only (tokenization timed apart); throughput: " << kThroughputDefinition
    << ".\n\n";

  s << "Findings\n";
  contention_findings(s, o.results);  // first: it qualifies every finding below
  for (const auto& f : batch_findings(o.results, config.latency_budget_ms, this_machine_limits)) {
    // A comparison among contended points measures the load, not the batch: not stated as a fact.
    if (!f.conclusive()) {
      s << "- " << f.group << ": which batch gives the best throughput is inconclusive: " << f.contended_points
        << " of its " << f.points
        << " points were measured while other processes took the cores (CONTENDED, above); so is where its "
           "throughput stops growing.\n";
      continue;
    }
    s << "- " << f.group << ": the best throughput is at batch " << f.best_batch << " ("
      << fmt("%.1f", f.best_samples_per_s) << " samples/s).";
    // How much batching buys: best vs batch 1 (when measured).
    for (const auto& p : o.results)
      if (p.status == "ok" && group_of(p) == f.group && p.key.batch == 1 && p.samples_per_s > 0)
        s << " That is " << fmt("%.2f", f.best_samples_per_s / p.samples_per_s) << "x batch 1.";
    s << "\n";
    plateau_line(s, f);
    if (config.latency_budget_ms > 0) {
      if (f.best_batch_in_budget)
        s << "  Under the latency budget of " << fmt("%.1f", config.latency_budget_ms) << " ms per batch (p95), batch "
          << f.best_batch_in_budget << " is best (" << fmt("%.1f", f.best_in_budget_samples_per_s) << " samples/s).\n";
      else
        s << "  No batch size meets the latency budget of " << fmt("%.1f", config.latency_budget_ms)
          << " ms per batch (p95).\n";
    }
    if (f.points >= 2 && (f.activation_bytes_fixed != 0 || f.activation_bytes_per_sample != 0))
      s << "  Memory: the forward's working memory (allocator activations + workspace peak) grows by "
        << fmt("%.2f", f.activation_bytes_per_sample / MiB) << " MiB per sample on top of "
        << fmt("%.1f", f.activation_bytes_fixed / MiB) << " MiB (least-squares fit, R^2 " << fmt("%.3f", f.fit_r2)
        << ").\n";
  }
  decode_findings(s, o.results);
  report::engine_findings(s, o.results);
  report::engine_accuracy_findings(s, o.engine_accuracy, o.accuracy);
  for (const auto& p : o.results)
    if (p.status != "ok") s << "- " << p.key.id() << " " << p.status << ": " << p.reason << "\n";
  double worst_spread = 0;
  std::string worst;
  for (const auto& p : o.results)
    if (p.status == "ok" && p.batch_latency_ms.median > 0 &&
        p.batch_latency_ms.std / p.batch_latency_ms.median > worst_spread) {
      worst_spread = p.batch_latency_ms.std / p.batch_latency_ms.median;
      worst = p.key.id();
    }
  if (worst_spread > 0.1)
    s << "- Noise: " << worst << " has a relative std of " << fmt("%.0f", worst_spread * 100)
      << "%; compare runs by their medians, and prefer a quiet machine.\n";
  if (!o.accuracy.empty()) {
    const bool synthetic = !o.models.empty() && o.models.front().synthetic_weights;
    s << "\n" << accuracy_text(o.accuracy, o.accuracy_dataset, synthetic);
    s << report::engine_accuracy_text(o.engine_accuracy, o.accuracy);
  }
  s << "\nMeasurement overhead: one steady-clock reading costs "
    << fmt("%.0f", o.results.empty() ? 0 : o.results.front().timer_overhead_ns) << " ns; appending a result line "
    << "(with fsync) took " << fmt("%.2f", o.result_write_ms_median) << " ms (median), outside every timing.\n";
  s << "\nNext steps\n";
  // Only for a sweep that tried no narrower dtype yet.
  bool narrower = false;
  for (const auto& d : config.dtypes) narrower = narrower || d != "f32";
  if (!narrower && !config.train.enabled)
    s << "- Try --dtype f32,bf16 (or int8, nf4): fewer weight bytes per forward (tach info says whether this CPU has a "
         "bf16 GEMM; without one the weights are bf16 and the arithmetic f32).\n";
  if (config.input == "synthetic")
    s << "- Measure real lengths: --input dataset --dataset FILE (add --bucketing to see what less padding buys).\n";
  s << "- Ask where the time goes: tach profile -m MODEL -b B -s T (trace, op tables, roofline verdicts), or --profile "
       "here for a trace of every point.\n";
  if (failed) s << "- " << failed << " points failed; their reasons are above and in results.jsonl.\n";
  return s.str();
}

std::string summary_json(const BenchConfig& config, const SweepOutcome& o) {
  const SystemInfo sys = system_info();
  nlohmann::json machine = {{"cpu", sys.cpu_model},
                            {"logical_cores", sys.logical_cores},
                            {"threads", run_threads(o, sys.threads)},
                            {"isa", sys.isa.summary()},
                            {"memory_total_bytes", sys.memory_total_bytes},
                            {"gemm_library", sys.gemm_library},
                            {"warnings", sys.warnings}};
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : o.models)
    models.push_back({{"spec", m.spec},
                      {"source", m.source},
                      {"architecture", m.architecture},
                      {"weights_dtype", m.weights_dtype},
                      {"synthetic_weights", m.synthetic_weights},
                      {"task", m.task},
                      {"parameters", m.parameters},
                      {"disk_bytes", m.disk_bytes},
                      {"memory_bytes", m.memory_bytes},
                      {"labels", m.labels},
                      {"notes", m.notes}});
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : batch_findings(o.results, config.latency_budget_ms, this_machine_limits))
    findings.push_back({{"group", f.group},
                        {"best_batch_by_throughput", f.best_batch},
                        {"contended_points", f.contended_points},
                        {"best_batch_conclusive", f.conclusive()},
                        {"best_samples_per_s", f.best_samples_per_s},
                        {"latency_budget_ms", config.latency_budget_ms},
                        {"best_batch_in_latency_budget", f.best_batch_in_budget},
                        {"best_in_budget_samples_per_s", f.best_in_budget_samples_per_s},
                        {"working_bytes_per_sample", f.activation_bytes_per_sample},
                        {"working_bytes_fixed", f.activation_bytes_fixed},
                        {"working_bytes_fit_r2", f.fit_r2},
                        {"throughput_stops_growing_at_batch", f.plateau_batch},
                        {"next_batch_gain_per_doubling", f.plateau_next_gain},
                        {"plateau_bound", f.plateau_bound},
                        {"plateau_ceiling_fraction", f.plateau_ceiling_fraction},
                        {"plateau_memory_fraction", f.plateau_memory_fraction},
                        {"plateau_why", f.plateau_why}});
  nlohmann::json points = nlohmann::json::array();
  int ok = 0;
  for (const auto& p : o.results) {
    points.push_back(nlohmann::json::parse(point_to_json(p)));
    ok += p.status == "ok";
  }
  nlohmann::json j = {
      {"schema", "tach.bench.summary/1"},
      {"run_dir", o.run_dir},
      {"model", config.model},
      {"allow_tf32", config.allow_tf32},
      {"machine", machine},
      {"models", models},
      {"stopping_rule", config.stop.describe()},
      {"throughput_definition", kThroughputDefinition},
      {"warmup_runs", config.warmup_runs},
      {"points_total", o.results.size()},
      {"points_ok", ok},
      {"points_resumed", o.resumed_points},
      {"findings", findings},
      {"overhead",
       {{"timer_overhead_ns", o.results.empty() ? 0.0 : o.results.front().timer_overhead_ns},
        {"result_write_ms_median", o.result_write_ms_median}}},
      {"points", points},
  };
  if (!o.accuracy.empty()) j["accuracy"] = nlohmann::json::parse(accuracy_to_json(o.accuracy, o.accuracy_dataset));
  if (!o.engine_accuracy.empty())
    j["engine_accuracy"] = nlohmann::json::parse(engine_accuracy_to_json(o.engine_accuracy));
  if (o.eval_only) {  // no points, so no sweep's method, findings or overheads
    for (const char* sweep_only : {"stopping_rule", "throughput_definition", "warmup_runs", "points_total", "points_ok",
                                   "points_resumed", "findings", "overhead", "points"})
      j.erase(sweep_only);
    j["kind"] = "eval";
    j["method"] = eval_method(config, o);
  }
  if (config.train.enabled) {
    j["kind"] = "train";
    nlohmann::json diag = nlohmann::json::array();
    for (const auto& d : diagnose(config, o))
      diag.push_back({{"series", d.series},
                      {"points", d.points},
                      {"peak_batch", d.peak_batch},
                      {"peak_samples_per_s", d.peak_samples_per_s},
                      {"sweet_spot_batch", d.sweet_spot_batch},
                      {"fixed_ms", d.fixed_ms},
                      {"per_sample_ms", d.per_sample_ms},
                      {"fit_r2", d.fit_r2},
                      {"fixed_share_at_smallest_batch", d.fixed_share_at_smallest},
                      {"overhead_bound", d.overhead_bound},
                      {"declines", d.declines},
                      {"decline_batch", d.decline_batch},
                      {"decline_fraction", d.decline_fraction},
                      {"decline_reasons", d.decline_reasons},
                      {"largest_batch_that_fits", d.largest_fit},
                      {"largest_batch_that_fits_checkpointed", d.largest_fit_checkpointed},
                      {"measured_over_estimate", d.measured_over_estimate},
                      {"findings", d.findings},
                      {"advice", d.advice}});
    j["diagnosis"] = diag;
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_run_reports(const BenchConfig& config, const SweepOutcome& o) {
  const std::filesystem::path dir(o.run_dir);
  write_atomically(dir / "summary.json", summary_json(config, o) + "\n");
  write_atomically(dir / "summary.txt", summary_text(config, o));
  // An eval measures no points: a header-only table would be a file that says nothing.
  if (!o.eval_only) write_atomically(dir / "detailed_metrics.csv", detailed_metrics_csv(o.results));
  if (config.train.enabled)
    write_atomically(dir / "performance_report.md",
                     performance_report_md(config.model, o.results, diagnose(config, o)));
}

}  // namespace tach
