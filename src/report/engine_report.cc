// Other engines beside tach's own: their standings (summary.txt's findings) and report.html's
// engine panel, both drawn from the points alone (the panel's verdicts from tach compare --by engine).
#include "report/engine_report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "report/figure_book.h"
#include "report/number_text.h"
#include "report/svg_chart.h"
#include "tach/compare.h"
#include "tach/error.h"

namespace tach::report {

namespace fs = std::filesystem;

namespace {

// A point's id without its engine, with the threads it ran with (as tach compare matches points:
// a default "t0" point is t2 where it ran 2 threads).
std::string pair_id(const PointResult& p) {
  PointKey k = p.key;
  if (p.threads_used > 0) k.threads = p.threads_used;
  return k.id_without("engine");
}

std::string outputs_cell(const PointResult& p) {
  const PointResult::EngineRun& e = p.engine_run;
  if (p.key.engine == "tach") return "the reference";
  if (!e.outputs_checked) return "not checked" + (e.outputs_note.empty() ? std::string() : ": " + e.outputs_note);
  return std::string(e.outputs_agree ? "agree" : "DISAGREE") + " (" + e.outputs_name + ": largest difference " +
         fmt("%.3g", e.max_abs_diff) + ", tolerance " + fmt("%.3g", e.tolerance) + ")";
}

std::string signed_pct(double x) { return fmt("%+.1f%%", 100 * x); }

// tach compare's verdict on a pair, in the engines' words: its latency change read as the engine
// being faster or slower, with the throughput's change and interval; noise and load as compare says.
std::string verdict_cell(const PointChange& c, const std::string& baseline) {
  const std::string change = signed_pct(c.throughput_change) + " samples/s [" + signed_pct(c.throughput_lo) + ", " +
                             signed_pct(c.throughput_hi) + "]";
  if (c.verdict == "improved") return "faster than " + baseline + ": " + change;
  if (c.verdict == "regressed") return "slower than " + baseline + ": " + change;
  if (c.verdict == "within noise") return "within noise (" + c.why + "): " + change;
  return c.verdict + (c.why.empty() ? std::string() : " (" + c.why + ")");
}

}  // namespace

std::vector<std::string> run_engines(const std::vector<PointResult>& points) {
  std::vector<std::string> engines;
  for (const auto& p : points)
    if (std::find(engines.begin(), engines.end(), p.key.engine) == engines.end()) engines.push_back(p.key.engine);
  if (engines.size() == 1 && engines.front() == "tach") engines.clear();
  return engines;
}

std::vector<EngineStanding> engine_standings(const std::vector<PointResult>& points) {
  const std::vector<std::string> engines = run_engines(points);
  std::vector<EngineStanding> out;
  if (engines.size() < 2) return out;
  std::map<std::string, const PointResult*> baseline;
  for (const auto& p : points)
    if (p.status == "ok" && p.key.engine == engines.front()) baseline[pair_id(p)] = &p;
  for (size_t e = 1; e < engines.size(); ++e) {
    EngineStanding s;
    s.engine = engines[e], s.baseline = engines.front();
    for (const auto& p : points) {
      if (p.status != "ok" || p.key.engine != s.engine) continue;
      if (!s.one_time) s.one_time = &p;
      const auto it = baseline.find(pair_id(p));
      if (it == baseline.end() || p.samples_per_s <= 0 || it->second->samples_per_s <= 0) continue;
      if (p.load.contended || it->second->load.contended) {
        ++s.contended;
        continue;
      }
      const double ratio = p.samples_per_s / it->second->samples_per_s;  // > 1: this engine is faster
      if (s.pairs == 0 || ratio > s.best) s.best = ratio, s.best_point = pair_id(p);
      if (s.pairs == 0 || ratio < s.worst) s.worst = ratio, s.worst_point = pair_id(p);
      ++s.pairs, s.wins += ratio > 1;
    }
    out.push_back(s);
  }
  return out;
}

void engine_findings(std::ostringstream& s, const std::vector<PointResult>& points) {
  if (run_engines(points).empty()) return;
  for (const auto& p : points)
    if (p.status == "ok" && p.key.engine != "tach" && p.engine_run.outputs_checked && !p.engine_run.outputs_agree)
      s << "- " << p.key.id() << ": " << p.key.engine << "'s " << p.engine_run.outputs_name
        << " DISAGREE with tach's on the same ids (largest difference " << fmt("%.3g", p.engine_run.max_abs_diff)
        << ", tolerance " << fmt("%.3g", p.engine_run.tolerance) << "): its timings are of a different computation\n";
  for (const EngineStanding& st : engine_standings(points)) {
    s << "- " << st.engine << " against " << st.baseline << ": ";
    if (st.pairs > 0) {
      s << st.engine << " has the higher throughput at " << st.wins << " of " << st.pairs << " points ("
        << fmt("%.2f", st.worst) << "x to " << fmt("%.2f", st.best) << "x " << st.baseline << "'s samples/s)";
      // Where: the point of its largest lead, and of its largest deficit.
      if (st.wins > 0) s << "; it leads most at " << st.best_point << " (" << fmt("%.2f", st.best) << "x)";
      if (st.wins < st.pairs)
        s << "; " << st.baseline << " leads most at " << st.worst_point << " (" << fmt("%.2f", 1 / st.worst) << "x)";
    } else {
      s << "no point of both measured without contention";
    }
    if (st.contended > 0)
      s << "; " << st.contended << " pair(s) left out: measured under contention (CONTENDED, above)";
    s << ".";
    if (st.one_time && st.engine != "tach") {
      const PointResult::EngineRun& r = st.one_time->engine_run;
      s << " One-time: load " << fmt("%.2f", r.load_s) << " s";
      if (r.setup_kind != "none")
        s << ", " << r.setup_kind << " " << fmt("%.2f", r.setup_s) << " s"
          << (r.setup_cached ? " (reused from the cache)" : "");
      s << ", first call " << fmt("%.3f", r.first_call_s) << " s; protocol " << fmt("%.1f", r.protocol_us_per_call)
        << " us per call.";
    }
    s << "\n";
  }
}

void engine_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points,
                    const std::string& run_dir) {
  const std::vector<std::string> engines = run_engines(points);
  if (engines.empty()) return;
  const std::string& baseline = engines.front();
  // tach compare --by engine over the same results: each pair's verdict, keyed by engine and point.
  std::map<std::pair<std::string, std::string>, PointChange> verdicts;
  std::string compare_note;
  if (engines.size() > 1) {
    try {
      CompareOptions co;
      co.by = "engine";
      const RunComparison c = compare_runs({run_dir}, co);
      for (const auto& ch : c.changes)
        if (ch.run < engines.size()) verdicts[{engines[ch.run], ch.id}] = ch;
    } catch (const Error& e) { compare_note = std::string("no verdicts: ") + e.what(); }
  }
  std::map<std::string, const PointResult*> base;
  for (const auto& p : points)
    if (p.status == "ok" && p.key.engine == baseline) base[pair_id(p)] = &p;
  std::vector<std::string> labels;
  std::vector<double> speedups;
  std::ostringstream rows;
  for (const auto& p : points) {
    const std::string id = pair_id(p);
    rows << "<tr><td>" << escape_html(id) << "</td><td>" << escape_html(p.key.engine) << "</td>";
    if (p.status != "ok") {
      rows << "<td colspan='6' style='text-align:left'>" << escape_html(p.status) << ": " << escape_html(p.reason)
           << "</td></tr>";
      continue;
    }
    rows << "<td>" << fmt("%.3f", p.batch_latency_ms.median) << "</td><td>" << fmt("%.3f", p.batch_latency_ms.p90)
         << "</td><td>" << fmt("%.1f", p.samples_per_s) << "</td>";
    const auto it = base.find(id);
    if (p.key.engine == baseline || it == base.end() || it->second->samples_per_s <= 0) {
      rows << "<td>" << (p.key.engine == baseline ? "baseline" : "-") << "</td><td>-</td>";
    } else {
      const double ratio = p.samples_per_s / it->second->samples_per_s;
      labels.push_back(p.key.engine + " " + id);
      speedups.push_back(ratio);
      const auto v = verdicts.find({p.key.engine, id});
      rows << "<td>" << fmt("%.2f", ratio) << "x</td><td style='text-align:left'>"
           << escape_html(v != verdicts.end()    ? verdict_cell(v->second, baseline)
                          : compare_note.empty() ? "-"
                                                 : compare_note)
           << "</td>";
    }
    rows << "<td style='text-align:left'>" << escape_html(outputs_cell(p)) << "</td></tr>";
  }
  h << "<h2>Engines</h2><p class='muted'>Each point on every engine, on the same token ids: the median and p90 "
       "latency of one call, the throughput (a batch over the median latency), and the speed-up against "
    << escape_html(baseline) << " (its samples/s over " << escape_html(baseline)
    << "'s at the same point) with tach compare --by engine's verdict: a change inside the noise threshold, or no "
       "larger than the drift within either side's runs, is within noise; a pair measured under contention or "
       "under different load is inconclusive. Another engine's outputs are checked against tach's before it is "
       "timed.</p>";
  if (!labels.empty())
    h << figs.add(
        "engine_speedup", "speed-up against " + baseline,
        bar_chart("throughput against " + baseline, labels, speedups, "x (samples/s over " + baseline + "'s)"));
  h << "<table><tr><th>point</th><th>engine</th><th>median ms</th><th>p90 ms</th><th>samples/s</th><th>speed-up</th>"
       "<th>verdict</th><th>outputs</th></tr>"
    << rows.str() << "</table>";
  // One-time costs, apart from the steady state: the first ok point of each engine.
  h << "<h3>One-time costs</h3><table><tr><th>engine</th><th>versions</th><th>load s</th><th>setup</th>"
       "<th>first call s</th><th>protocol us per call</th><th>ping us</th></tr>";
  for (const auto& engine : engines) {
    if (engine == "tach") continue;
    const auto p = std::find_if(points.begin(), points.end(),
                                [&](const PointResult& q) { return q.key.engine == engine && q.status == "ok"; });
    if (p == points.end()) {
      h << "<tr><td>" << escape_html(engine) << "</td><td colspan='6'>no point measured</td></tr>";
      continue;
    }
    const PointResult::EngineRun& r = p->engine_run;
    const std::string setup = r.setup_kind == "none" ? std::string("none")
                                                     : r.setup_kind + " " + fmt("%.2f", r.setup_s) + " s" +
                                                           (r.setup_cached ? " (reused from the cache)" : "");
    h << "<tr><td>" << escape_html(engine) << "</td><td style='text-align:left'>" << escape_html(r.versions)
      << "</td><td>" << fmt("%.2f", r.load_s) << "</td><td>" << escape_html(setup) << "</td><td>"
      << fmt("%.3f", r.first_call_s) << "</td><td>" << fmt("%.1f", r.protocol_us_per_call) << "</td><td>"
      << fmt("%.1f", r.ping_round_trip_us) << "</td></tr>";
  }
  h << "</table>";
  // Each engine's accuracy pass beside tach's (accuracy.json's "engines"), where the run had one.
  std::vector<AccuracyResult> tach_passes;
  std::vector<EngineAccuracy> engine_passes;
  if (std::ifstream in(fs::path(run_dir) / "accuracy.json"); in) {
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      tach_passes = accuracy_from_json(text, run_dir + "/accuracy.json", nullptr);
      engine_passes = engine_accuracy_from_json(text, run_dir + "/accuracy.json");
    } catch (const Error& e) { h << "<p class='muted'>" << escape_html(e.what()) << "</p>"; }
  }
  engine_accuracy_html(h, engine_passes, tach_passes);
  std::ostringstream findings;
  engine_findings(findings, points);
  engine_accuracy_findings(findings, engine_passes, tach_passes);
  if (!findings.str().empty()) h << "<pre>" << escape_html(findings.str()) << "</pre>";
}

}  // namespace tach::report
