// tach compare: matching points across runs, block-bootstrap intervals, verdicts, and their tables.
#include "tach/compare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "report/compare_scores.h"
#include "report/compare_verdict.h"
#include "report/number_text.h"
#include "tach/error.h"

namespace tach {

namespace fs = std::filesystem;

namespace {

using report::fixed_text;

CompareRun read_run(const std::string& dir) {
  CompareRun run;
  run.dir = dir;
  const fs::path results = fs::path(dir) / "results.jsonl";
  run.scores = report::read_run_scores(dir);
  check(fs::is_regular_file(results) || !run.scores.empty(),
        dir +
            ": no results.jsonl and no eval scores (accuracy.json, token_classification.json, "
            "question_answering.json): is it a tach bench or eval run directory?");
  if (fs::is_regular_file(results)) {
    run.points = read_run_results(dir);
    check(!run.points.empty() || !run.scores.empty(), results.string() + ": no finished points to compare");
  }
  // Points meet by the threads they ran with, not the count asked for: a default point ("t0") of
  // a run whose default was 2 threads is t2 here, and a run whose default was 1 is t1, so the two
  // are compared across threads, and said to be (not paired as one point).
  for (auto& p : run.points) {
    run.default_threads.push_back(p.key.threads == 0);
    if (p.threads_used > 0) p.key.threads = p.threads_used;
  }
  const fs::path config = fs::path(dir) / "config.json";
  if (fs::is_regular_file(config)) {
    try {
      std::ifstream c(config);
      const auto j = nlohmann::json::parse(c);
      run.model = j.value("model", std::string());
      run.started_at = j.value("run_id", std::string());
      run.allow_tf32 = j.value("allow_tf32", false);
    } catch (const std::exception&) {
      // The model name is decoration here; results.jsonl is what is compared.
    }
  }
  return run;
}

std::string pct(double x, int decimals = 1) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(decimals);
  s << (x >= 0 ? "+" : "") << x * 100 << "%";
  return s.str();
}

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string percent_cell(double v) { return std::isfinite(v) ? fixed_text(v, 2) + "%" : "-"; }

// The eval scores' table: a header row, then a row per score change (csv: numbers unformatted).
std::vector<std::vector<std::string>> score_rows(const RunComparison& c, bool csv) {
  std::vector<std::vector<std::string>> rows;
  if (csv)
    rows.push_back(
        {"pass", "metric", "baseline", "run", "baseline_percent", "percent", "change_points", "verdict", "why"});
  else rows.push_back({"pass", "metric", "run", "baseline", "score", "verdict", "change"});
  for (const auto& sc : c.scores) {
    const double change = sc.percent - sc.baseline_percent;
    if (csv)
      rows.push_back({sc.pass, sc.metric, c.runs[0].dir, c.runs[sc.run].dir,
                      std::isfinite(sc.baseline_percent) ? fixed_text(sc.baseline_percent, 6) : "",
                      std::isfinite(sc.percent) ? fixed_text(sc.percent, 6) : "",
                      std::isfinite(change) ? fixed_text(change, 6) : "", sc.verdict, sc.why});
    else
      rows.push_back({sc.pass, sc.metric, std::to_string(sc.run), percent_cell(sc.baseline_percent),
                      percent_cell(sc.percent), sc.verdict,
                      sc.verdict == "not comparable" ? sc.why : report::points_text(change)});
  }
  return rows;
}

// The axis two runs differ in, when they share no point id but do once it is left out.
std::string axis_between(const CompareRun& a, const CompareRun& b) {
  for (const auto& p : a.points)
    for (const auto& q : b.points)
      if (p.key.id() == q.key.id()) return "";
  for (const auto& axis : point_axes()) {
    if (axis == "batch") continue;
    std::set<std::string> left;
    for (const auto& p : a.points) left.insert(p.key.id_without(axis));
    for (const auto& q : b.points)
      if (left.count(q.key.id_without(axis))) return axis;
  }
  return "";
}

// A point's value of `axis` as a side is named: its id's, and the engine's name for tach's own
// (which its id leaves out).
std::string side_value(const PointResult& p, const std::string& axis) {
  return axis == "engine" ? p.key.engine : p.key.value_of(axis);
}

// Every run's points pooled, then split by the value of `axis`: one side per value, in the
// order first seen.
std::vector<CompareRun> sides_by(const std::vector<CompareRun>& runs, const std::string& axis) {
  std::vector<CompareRun> sides;
  std::map<std::string, size_t> index;
  for (const auto& r : runs)
    for (const PointResult& p : r.points) {
      const std::string v = side_value(p, axis);
      check(!v.empty(),
            r.dir + ": its points have no " + axis + " (an inference run); --by " + axis + " compares training runs");
      if (!index.count(v)) {
        index[v] = sides.size();
        CompareRun s;
        s.model = r.model;
        s.started_at = r.started_at;
        sides.push_back(s);
      }
      CompareRun& s = sides[index[v]];
      if (s.dir.find(r.dir) == std::string::npos) s.dir += (s.dir.empty() ? "" : " + ") + r.dir;
      const auto i = size_t(&p - r.points.data());
      s.default_threads.push_back(i < r.default_threads.size() && r.default_threads[i]);
      s.points.push_back(p);
    }
  for (auto& s : sides) s.dir += " [" + axis + " " + side_value(s.points.front(), axis) + "]";
  check(sides.size() >= 2, "--by " + axis + ": every point has the same " + axis + " (" +
                               (sides.empty() ? "" : side_value(sides.front().points.front(), axis)) +
                               "), so there is nothing to compare");
  return sides;
}

// The fewest latency samples a side needs for a verdict: two time blocks of three, each block's
// median then steady under one outlier.
constexpr int64_t kMinSamplesForVerdict = 6;

// One row of the comparison: the change from a's samples (ms per batch, or per decode step) to
// b's, with the block-bootstrap interval of the median's ratio, each run's drift, and the verdict
// (compare_verdict.h says why blocks). Throughput is a batch's rows over the median latency
// (kThroughputDefinition): samples/s, or a decode's tokens/s.
PointChange latency_change(const std::string& id, size_t r, const PointResult& a, const PointResult& b,
                           bool default_threads_both, const std::vector<double>& sa, const std::vector<double>& sb,
                           double median_a, double median_b, const CompareOptions& options, std::mt19937_64& rng) {
  PointChange ch;
  ch.id = id;
  ch.run = r;
  ch.baseline_n = int64_t(sa.size());
  ch.n = int64_t(sb.size());
  ch.baseline_median_ms = median_a;
  ch.median_ms = median_b;
  if (a.status != "ok" || b.status != "ok") {
    ch.verdict = "not comparable";
    ch.why = a.status != "ok" ? "baseline " + a.status + ": " + a.reason : "this run " + b.status + ": " + b.reason;
    return ch;
  }
  const double rows_a = double(a.key.batch), rows_b = double(b.key.batch);
  ch.baseline_samples_per_s = per_second_at_median(rows_a, ch.baseline_median_ms);
  ch.samples_per_s = per_second_at_median(rows_b, ch.median_ms);
  // Throughput is rows over the median latency, so its change follows from the latency's:
  // (rows_b / rows_a) / (1 + latency change) - 1, and its interval from the latency's ends.
  const auto throughput_of = [&](double latency_change) { return rows_b / rows_a / (1 + latency_change) - 1; };
  if (ch.baseline_n < kMinSamplesForVerdict || ch.n < kMinSamplesForVerdict) {
    ch.latency_change = ch.median_ms / ch.baseline_median_ms - 1;
    ch.throughput_change = throughput_of(ch.latency_change);
    ch.verdict = "not comparable";
    // One sample (a run with -r 1) gives no interval; none at all is a run from before raw
    // latencies were kept. A few give two blocks of one or two samples: four resamples a side, an
    // interval that is the block medians' range, and a drift over a millisecond or two that says
    // nothing of how far two runs seconds apart can differ (the README's two runs of -r 3 on a
    // busy machine were called regressed by 40%).
    const int64_t fewest = std::min(ch.baseline_n, ch.n);
    const std::string where = ch.baseline_n == ch.n ? "each side" : "one side";
    ch.why = fewest == 0
                 ? "no raw latencies on one side (a run written before they were kept): medians only, no interval"
             : fewest == 1
                 ? "one latency sample on " + where + " (-r 1): one sample cannot give an interval, so medians only"
                 : std::to_string(fewest) + " latency samples on " + where + " (-r " + std::to_string(fewest) +
                       "): fewer than " + std::to_string(kMinSamplesForVerdict) +
                       " cannot tell a change from the spread between runs, so medians only (--runs " +
                       std::to_string(kMinSamplesForVerdict) + " or more)";
    return ch;
  }
  const report::RatioInterval lat = report::block_bootstrap_ratio(sa, sb, options.confidence, options.resamples, rng);
  ch.latency_change = lat.change, ch.latency_lo = lat.lo, ch.latency_hi = lat.hi;
  ch.throughput_change = throughput_of(lat.change);
  ch.throughput_lo = throughput_of(lat.hi), ch.throughput_hi = throughput_of(lat.lo);
  ch.baseline_drift = report::within_run_drift(sa);
  ch.drift = report::within_run_drift(sb);
  // The verdict is on the time per row: the latency's change where the batches match, and where
  // they differ (--by batch) a larger batch's longer latency is no regression when each of its
  // rows takes less time. rows_a / rows_b scales the change and both ends of its interval.
  const double per_row = rows_a / rows_b;
  const double change = (1 + lat.change) * per_row - 1;
  const double lo = (1 + lat.lo) * per_row - 1, hi = (1 + lat.hi) * per_row - 1;
  const std::string what =
      per_row == 1 ? " latency"
                   : " time per row (batch " + std::to_string(a.key.batch) + " to " + std::to_string(b.key.batch) + ")";
  ch.significant = lo > 0 || hi < 0;
  const report::LoadCheck load = report::load_check(a, b);
  const double drift = std::max(ch.baseline_drift, ch.drift);
  // Both ran the default count and got different ones: the cores free at each start differed, so
  // the two met different load (and the threads differ as well).
  const bool threads_followed_load = default_threads_both && a.key.threads != b.key.threads;
  if (threads_followed_load) {
    ch.verdict = "inconclusive";
    ch.why =
        "measured under different load: the default thread count follows the cores free when tach starts, "
        "and it was " +
        std::to_string(a.key.threads) + " for the baseline and " + std::to_string(b.key.threads) +
        " for this run (-t sets the count)";
  } else if (load.inconclusive) {
    ch.verdict = "inconclusive";
    ch.why = load.why;
  } else if (!ch.significant) {
    ch.verdict = "within noise";
    ch.why = "not significant (the interval holds 0)";
  } else if (std::abs(change) < options.noise_threshold) {
    ch.verdict = "within noise";
    ch.why = "below the " + fixed_text(options.noise_threshold * 100, 1) + "% threshold";
  } else if (report::within_drift(change, drift)) {
    ch.verdict = "within noise";
    ch.why = pct(change) + what + " is within the drift inside the runs: " +
             (ch.baseline_drift >= ch.drift ? std::string("the baseline's") : std::string("this run's")) +
             " block medians were " + fixed_text(drift * 100, 1) + "% apart while it ran";
  } else {
    ch.verdict = change > 0 ? "regressed" : "improved";
    ch.why = pct(change) + what;
  }
  if (!load.known && (ch.verdict == "improved" || ch.verdict == "regressed"))
    ch.why += !a.load.measured && !b.load.measured ? " (no load recorded: older runs)"
              : a.load.measured                    ? " (no load recorded for this run)"
                                                   : " (no load recorded for the baseline)";
  return ch;
}

// The runs whose TF32 setting differs from the baseline's: their GPU f32 points multiplied at
// another precision (10 mantissa bits against 23), so a change there is the precision's as much as
// the code's.
std::vector<std::string> tf32_differences(const std::vector<CompareRun>& runs) {
  std::vector<std::string> out;
  const auto setting = [](const CompareRun& r) {
    return r.allow_tf32 ? std::string("on TF32 tensor cores (--allow-tf32)") : std::string("in full f32");
  };
  for (size_t r = 1; r < runs.size(); ++r)
    if (runs[r].allow_tf32 != runs[0].allow_tf32)
      out.push_back("run " + std::to_string(r) + " (" + runs[r].dir + ") ran its GPU f32 GEMMs " + setting(runs[r]) +
                    ", the baseline " + setting(runs[0]) +
                    ": a change in a cuda f32 point is the precision's as much as the code's");
  return out;
}

// A point whose GEMMs ran at another precision on each side (TF32 on one only).
bool tf32_differs(const CompareRun& base, const CompareRun& run, const PointResult& p) {
  return base.allow_tf32 != run.allow_tf32 && p.key.dtype == "f32" && p.key.device.rfind("cuda", 0) == 0;
}

}  // namespace

RunComparison compare_runs(const std::vector<std::string>& run_dirs, const CompareOptions& options) {
  usage_check(run_dirs.size() >= 2 || !options.by.empty(),
              "tach compare needs two runs or more (the first is the baseline), or one run and --by AXIS");
  usage_check(options.noise_threshold >= 0 && options.noise_threshold < 1,
              "--noise-threshold must be a fraction in [0, 1), e.g. 0.02");
  usage_check(options.confidence > 0 && options.confidence < 1, "--confidence must be in (0, 1), e.g. 0.95");
  usage_check(options.resamples >= 100, "--resamples must be at least 100");
  if (!options.by.empty()) {
    const auto& axes = point_axes();
    std::string list;
    for (const auto& axis : axes) list += (list.empty() ? "" : ", ") + axis;
    usage_check(std::find(axes.begin(), axes.end(), options.by) != axes.end(),
                "no point axis '" + options.by + "' (axes: " + list + ")");
  }
  RunComparison c;
  c.options = options;
  for (const auto& d : run_dirs) c.runs.push_back(read_run(d));
  c.settings_differ = tf32_differences(c.runs);
  c.by = options.by;
  if (c.by.empty() && c.runs.size() == 2) {
    c.by = axis_between(c.runs[0], c.runs[1]);
    if (!c.by.empty())
      c.note = "the runs share no point, but do once " + c.by + " is left out: comparing " + c.by + " (as --by " +
               c.by + ")";
  }
  // Scores meet by pass and metric across whole runs (an axis within a run is a latency's).
  if (c.by.empty()) c.scores = report::compare_scores(c.runs);
  if (!c.by.empty()) {
    (void)PointKey{}.id_without(c.by);  // an unknown axis is an error naming the axes
    c.runs = sides_by(c.runs, c.by);
    if (c.note.empty()) c.note = "points matched across values of " + c.by + ", the first value the baseline";
  }
  const auto match_id = [&](const PointResult& p) { return c.by.empty() ? p.key.id() : p.key.id_without(c.by); };
  std::mt19937_64 rng(options.seed);

  // Every point id, in the order first seen (the baseline's grid order first).
  std::vector<std::string> ids;
  std::set<std::string> seen;
  std::vector<std::map<std::string, size_t>> by_id(c.runs.size());  // id -> index in the run's points
  for (size_t r = 0; r < c.runs.size(); ++r)
    for (size_t i = 0; i < c.runs[r].points.size(); ++i) {
      const std::string id = match_id(c.runs[r].points[i]);
      by_id[r][id] = i;
      if (seen.insert(id).second) ids.push_back(id);
    }
  for (const auto& id : ids) {
    std::vector<std::string> in, missing;
    for (size_t r = 0; r < c.runs.size(); ++r) (by_id[r].count(id) ? in : missing).push_back(c.runs[r].dir);
    if (!missing.empty()) {
      std::string s = id + ": only in";
      for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : " ") + in[i];
      c.only_in.push_back(s);
    }
  }
  for (size_t r = 1; r < c.runs.size(); ++r) {
    for (const auto& id : ids) {
      if (!by_id[0].count(id) || !by_id[r].count(id)) continue;
      const size_t ia = by_id[0].at(id), ib = by_id[r].at(id);
      const PointResult& a = c.runs[0].points[ia];
      const PointResult& b = c.runs[r].points[ib];
      const auto by_default = [](const CompareRun& run, size_t i) {
        return i < run.default_threads.size() && run.default_threads[i];
      };
      const bool default_threads_both = by_default(c.runs[0], ia) && by_default(c.runs[r], ib);
      c.changes.push_back(latency_change(id, r, a, b, default_threads_both, a.batch_latency_samples_ms,
                                         b.batch_latency_samples_ms, a.batch_latency_ms.median,
                                         b.batch_latency_ms.median, options, rng));
      if (tf32_differs(c.runs[0], c.runs[r], a)) c.changes.back().why += " (TF32 GEMMs on one side only)";
      // A GPU point whose activations were 16-bit on one side (TACH_GPU_ACTIVATIONS=f32 on the other,
      // or an older tach): the change is the activations' as much as the code's.
      if (a.activations != b.activations)
        c.changes.back().why += " (activations " + a.activations + " in the baseline, " + b.activations + " here)";
      // A causal LM's decoding, where both sides decoded: its steps compared as a point of their own.
      if (a.status == "ok" && b.status == "ok" && a.decode.step_ms.n > 0 && b.decode.step_ms.n > 0)
        c.changes.push_back(latency_change(id + " decode", r, a, b, default_threads_both, a.decode.step_samples_ms,
                                           b.decode.step_samples_ms, a.decode.step_ms.median, b.decode.step_ms.median,
                                           options, rng));
    }
  }
  return c;
}

std::string verdict_counts(const RunComparison& c) {
  int improved = 0, regressed = 0, noise = 0, inconclusive = 0, other = 0;
  for (const auto& ch : c.changes)
    (ch.verdict == "improved"       ? improved
     : ch.verdict == "regressed"    ? regressed
     : ch.verdict == "within noise" ? noise
     : ch.verdict == "inconclusive" ? inconclusive
                                    : other)++;
  return std::to_string(c.changes.size()) + " comparisons: " + std::to_string(improved) + " improved, " +
         std::to_string(regressed) + " regressed, " + std::to_string(noise) + " within noise" +
         (inconclusive ? ", " + std::to_string(inconclusive) + " inconclusive (measured under load)" : "") +
         (other ? ", " + std::to_string(other) + " not comparable" : "");
}

std::string score_counts(const RunComparison& c) {
  int higher = 0, lower = 0, same = 0, other = 0;
  for (const auto& sc : c.scores)
    (sc.verdict == "higher" ? higher : sc.verdict == "lower" ? lower : sc.verdict == "same" ? same : other)++;
  return std::to_string(c.scores.size()) + " eval scores: " + std::to_string(higher) + " higher, " +
         std::to_string(lower) + " lower, " + std::to_string(same) + " the same" +
         (other ? ", " + std::to_string(other) + " not comparable" : "");
}

std::vector<const PointChange*> regressions_beyond(const RunComparison& c, double pct_limit) {
  std::vector<const PointChange*> out;
  for (const auto& ch : c.changes)
    // By the time per row, as the verdict: the latency's change where the batches match.
    if (ch.verdict == "regressed" && 1 / (1 + ch.throughput_change) - 1 > pct_limit) out.push_back(&ch);
  return out;
}

namespace {

// tach.compare/1 (docs/formats.md): the method, the runs, every change and eval score.
std::string comparison_json(const RunComparison& c) {
  const CompareOptions& o = c.options;
  nlohmann::json j;
  j["schema"] = "tach.compare/1";
  j["method"] = {{"statistic", std::string("median batch latency per point; throughput: ") + kThroughputDefinition},
                 {"interval",
                  "percentile block bootstrap: each side's raw latencies cut in measurement order into "
                  "n/6 blocks (2 to 8), whole blocks resampled with replacement"},
                 {"drift",
                  "largest block median / smallest - 1, per run; a change no larger than either run's (as "
                  "ratios) is within noise"},
                 {"load",
                  "inconclusive when either side was contended (other processes took cores its threads "
                  "needed): under different load if the other was not, and a change the other processes may "
                  "have made if both were; inconclusive too, as under different load, when the two sides' "
                  "other-process use (mean or busiest sub-window) differs by more than 0.25 cores, when it moved "
                  "by more than that while either side ran, or when both ran the default thread count and got "
                  "different counts; a run without a load record is not judged on load"},
                 {"confidence", o.confidence},
                 {"resamples", o.resamples},
                 {"seed", o.seed},
                 {"noise_threshold", o.noise_threshold},
                 {"changes_are", "relative: new / baseline - 1"}};
  j["runs"] = nlohmann::json::array();
  for (const auto& r : c.runs) j["runs"].push_back({{"dir", r.dir}, {"model", r.model}, {"points", r.points.size()}});
  j["changes"] = nlohmann::json::array();
  for (const auto& ch : c.changes)
    j["changes"].push_back({{"point", ch.id},
                            {"baseline", c.runs[0].dir},
                            {"run", c.runs[ch.run].dir},
                            {"baseline_n", ch.baseline_n},
                            {"n", ch.n},
                            {"baseline_median_ms", ch.baseline_median_ms},
                            {"median_ms", ch.median_ms},
                            {"baseline_samples_per_s", ch.baseline_samples_per_s},
                            {"samples_per_s", ch.samples_per_s},
                            {"latency_change", ch.latency_change},
                            {"latency_ci", {ch.latency_lo, ch.latency_hi}},
                            {"throughput_change", ch.throughput_change},
                            {"throughput_ci", {ch.throughput_lo, ch.throughput_hi}},
                            {"significant", ch.significant},
                            {"baseline_drift", ch.baseline_drift},
                            {"drift", ch.drift},
                            {"verdict", ch.verdict},
                            {"why", ch.why}});
  j["only_in"] = c.only_in;
  j["scores"] = nlohmann::json::array();
  for (const auto& sc : c.scores)
    j["scores"].push_back({{"pass", sc.pass},
                           {"metric", sc.metric},
                           {"baseline", c.runs[0].dir},
                           {"run", c.runs[sc.run].dir},
                           {"baseline_percent", finite_or_null(sc.baseline_percent)},
                           {"percent", finite_or_null(sc.percent)},
                           {"change_points", finite_or_null(sc.percent - sc.baseline_percent)},
                           {"verdict", sc.verdict},
                           {"why", sc.why}});
  j["by"] = c.by;
  j["matched"] = c.note;
  j["settings_differ"] = c.settings_differ;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// The latency table: a header and one row per change (csv: the raw figures, one column each).
std::vector<std::vector<std::string>> change_rows(const RunComparison& c, bool csv, const std::string& ci) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"point", "run", "baseline ms (n)", "ms (n)", "latency change [" + ci + "]",
                  "throughput change [" + ci + "]", "verdict", "why"});
  if (csv)
    rows.back() = {"point",
                   "baseline",
                   "run",
                   "baseline_n",
                   "n",
                   "baseline_median_ms",
                   "median_ms",
                   "latency_change",
                   "latency_ci_lo",
                   "latency_ci_hi",
                   "throughput_change",
                   "throughput_ci_lo",
                   "throughput_ci_hi",
                   "baseline_drift",
                   "drift",
                   "verdict",
                   "why"};
  for (const auto& ch : c.changes) {
    const bool interval = ch.baseline_n >= 2 && ch.n >= 2 && ch.verdict != "not comparable";
    if (csv) {
      rows.push_back({ch.id, c.runs[0].dir, c.runs[ch.run].dir, std::to_string(ch.baseline_n), std::to_string(ch.n),
                      fixed_text(ch.baseline_median_ms, 4), fixed_text(ch.median_ms, 4),
                      fixed_text(ch.latency_change, 5), interval ? fixed_text(ch.latency_lo, 5) : "",
                      interval ? fixed_text(ch.latency_hi, 5) : "", fixed_text(ch.throughput_change, 5),
                      interval ? fixed_text(ch.throughput_lo, 5) : "", interval ? fixed_text(ch.throughput_hi, 5) : "",
                      fixed_text(ch.baseline_drift, 5), fixed_text(ch.drift, 5), ch.verdict, ch.why});
      continue;
    }
    rows.push_back(
        {ch.id, std::to_string(ch.run),
         fixed_text(ch.baseline_median_ms, 3) + " (" + std::to_string(ch.baseline_n) + ")",
         fixed_text(ch.median_ms, 3) + " (" + std::to_string(ch.n) + ")",
         pct(ch.latency_change) + (interval ? " [" + pct(ch.latency_lo) + ", " + pct(ch.latency_hi) + "]" : ""),
         pct(ch.throughput_change) +
             (interval ? " [" + pct(ch.throughput_lo) + ", " + pct(ch.throughput_hi) + "]" : ""),
         ch.verdict, ch.why});
  }
  return rows;
}

// RFC 4180: a field with a comma, quote or newline quoted, its quotes doubled.
void print_csv(std::ostringstream& out, const std::vector<std::vector<std::string>>& table) {
  for (const auto& r : table) {
    for (size_t i = 0; i < r.size(); ++i) {
      const bool quote = r[i].find_first_of(",\"\n") != std::string::npos;
      std::string v = r[i];
      if (quote) {
        std::string q;
        for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        v = "\"" + q + "\"";
      }
      out << (i ? "," : "") << v;
    }
    out << "\n";
  }
}

// Markdown (a header rule after the first row), or columns padded to their widest cell.
void print_table(std::ostringstream& out, const std::vector<std::vector<std::string>>& table, bool md) {
  std::vector<size_t> width(table[0].size(), 0);
  for (const auto& r : table)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (size_t k = 0; k < table.size(); ++k) {
    const auto& r = table[k];
    if (md) {
      out << "|";
      for (const auto& v : r) out << " " << v << " |";
      out << "\n";
      if (k == 0) {
        out << "|";
        for (size_t i = 0; i < r.size(); ++i) out << "---|";
        out << "\n";
      }
    } else {
      for (size_t i = 0; i < r.size(); ++i)
        out << (i ? "  " : "") << r[i] << std::string(i + 1 < r.size() ? width[i] - r[i].size() : 0, ' ');
      out << "\n";
    }
  }
}

}  // namespace

std::string comparison_text(const RunComparison& c, const std::string& format) {
  if (format == "json") return comparison_json(c);
  const CompareOptions& o = c.options;
  const std::string ci = fixed_text(o.confidence * 100, 0) + "% CI";
  const bool csv = format == "csv", md = format == "md";
  usage_check(csv || md || format == "table", "--format '" + format + "': expected table, md, csv or json");
  const std::vector<std::vector<std::string>> rows = change_rows(c, csv, ci);
  std::ostringstream out;
  if (csv) {
    // Latency rows; eval scores as a table of their own (after a blank line when both are there).
    if (!c.changes.empty() || c.scores.empty()) print_csv(out, rows);
    if (!c.scores.empty()) {
      if (!c.changes.empty()) out << "\n";
      print_csv(out, score_rows(c, true));
    }
    return out.str();
  }
  out << (md ? "" : "tach compare\n");
  if (!c.note.empty()) out << (md ? "" : "  ") << c.note << "\n";
  for (const std::string& s : c.settings_differ) out << (md ? "" : "  ") << "SETTINGS DIFFER: " << s << "\n";
  for (size_t r = 0; r < c.runs.size(); ++r) {
    out << (md ? "- " : "  ") << "run " << r << (r == 0 ? " (baseline)" : "") << ": " << c.runs[r].dir
        << (c.runs[r].model.empty() ? "" : ", model " + c.runs[r].model)
        << (c.runs[r].allow_tf32 ? ", f32 GEMMs on TF32 (--allow-tf32)" : "");
    if (!c.runs[r].points.empty() || c.runs[r].scores.empty()) out << ", " << c.runs[r].points.size() << " points";
    if (!c.runs[r].scores.empty()) out << ", " << c.runs[r].scores.size() << " eval scores";
    out << "\n";
  }
  out << (md ? "\n" : "");
  if (!c.changes.empty() || c.scores.empty()) {
    print_table(out, rows, md);
    out << (md ? "\n" : "") << verdict_counts(c)
        << ". Latency is the median batch latency (ms, wall clock) of each point (a training point's: its optimizer "
           "step); throughput: "
        << kThroughputDefinition << "; changes are new / baseline - 1 with a " << ci << " from " << o.resamples
        << " block-bootstrap resamples (each run's latencies cut in time order into blocks, whole blocks "
           "resampled); a change is a verdict only with "
        << kMinSamplesForVerdict << " latencies a side or more, when the interval excludes 0, it is at least "
        << fixed_text(o.noise_threshold * 100, 1)
        << "% (--noise-threshold), and it exceeds the drift inside both runs (how far their blocks' medians moved "
           "apart); points measured under contention (other processes taking cores their threads needed) on either "
           "side, or under different load (other processes' use 0.25 cores apart, or moving that much while a side "
           "ran; or default thread counts that followed it), are inconclusive.\n";
  }
  if (!c.scores.empty()) {
    out << (md ? "\n" : "\n  eval scores\n");
    print_table(out, score_rows(c, false), md);
    out << (md ? "\n" : "") << score_counts(c)
        << ". Scores are percent, matched by pass (device/dtype) and metric; a change is in percentage points. An "
           "eval's score is the same each time for one model, data and dtype, so any change is real (no interval); "
           "scores measured on other data (another file, size, tag scheme or SQuAD version) are not compared.\n";
  }
  for (const auto& s : c.only_in) out << (md ? "- " : "  ") << s << "\n";
  return out.str();
}

}  // namespace tach
