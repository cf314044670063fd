// tach compare: did it get faster, or is that noise? Bench runs compared point by point, eval runs score by
// score.
#include <cmath>
#include <iostream>
#include <optional>
#include <set>

#include "commands.h"
#include "tach/compare.h"
#include "tach/error.h"

namespace tach::cli {

namespace {

struct CompareCliOptions {
  std::vector<std::string> runs;
  std::string format = "table";
  double noise_threshold_pct = 2;
  double confidence = 0.95;
  int resamples = 10000;
  uint64_t seed = 0;
  std::optional<double> fail_on_regression_pct;  // unset: no limit
  std::string html = "compare.html";
  std::string by;
  bool no_html = false;
};

// Exit status 4: a regression beyond --fail-on-regression (CI); the table is printed first.
constexpr int kExitRegressed = 4;

// Why no point of the later runs matches one of the baseline's: the kinds of run differ (an
// inference sweep against a training sweep), or their grids share no point.
std::string nothing_comparable(const RunComparison& c) {
  const auto kinds = [](const CompareRun& run) {
    std::set<std::string> k;
    for (const auto& p : run.points) k.insert(p.key.kind == "train" ? "training" : p.key.kind);
    std::string s;
    for (const auto& x : k) s += (s.empty() ? "" : " and ") + x;
    return s.empty() ? std::string("no") : s;
  };
  std::string why = "nothing to compare: ";
  for (size_t r = 1; r < c.runs.size(); ++r)
    if (kinds(c.runs[r]) != kinds(c.runs[0])) {
      why += c.runs[0].dir + " holds " + kinds(c.runs[0]) + " points and " + c.runs[r].dir + " " + kinds(c.runs[r]) +
             " points, and a point is compared only with one of its kind";
      return why;
    }
  why += "the runs share no point (the same device, dtype, threads, batch and sequence length";
  return why + (c.by.empty() ? "); --by AXIS compares the values of one axis" : ")");
}

int run_compare(const CompareCliOptions& opt) {
  usage_check(opt.noise_threshold_pct >= 0 && opt.noise_threshold_pct < 100,
              "--noise-threshold is a percentage in [0, 100), e.g. 2");
  usage_check(
      !opt.fail_on_regression_pct || (std::isfinite(*opt.fail_on_regression_pct) && *opt.fail_on_regression_pct >= 0),
      "--fail-on-regression takes a percentage of 0 or more, e.g. 5");
  CompareOptions o;
  o.noise_threshold = opt.noise_threshold_pct / 100;
  o.confidence = opt.confidence;
  o.resamples = opt.resamples;
  o.seed = opt.seed;
  o.by = opt.by;
  const RunComparison c = compare_runs(opt.runs, o);
  check(!c.changes.empty() || !c.scores.empty(), nothing_comparable(c));
  std::cout << comparison_text(c, opt.format);
  if (!opt.no_html) {
    write_comparison_html(c, opt.html);
    (opt.format == "table" ? std::cout : std::cerr)
        << "wrote " << opt.html << " (the change per point, overlaid distributions, every number)\n";
  }
  if (opt.fail_on_regression_pct) {
    const auto bad = regressions_beyond(c, *opt.fail_on_regression_pct / 100);
    if (!bad.empty()) {
      std::cerr << "tach compare: " << bad.size() << " point(s) regressed by more than " << *opt.fail_on_regression_pct
                << "% (--fail-on-regression):";
      for (const auto* ch : bad) std::cerr << " " << ch->id << " (run " << ch->run << ")";
      std::cerr << "\n";
      return kExitRegressed;
    }
  }
  return 0;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto opt = std::make_shared<CompareCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Compare bench runs point by point: the change in median latency and throughput with a block-bootstrap "
      "confidence interval over the raw per-run latencies in time order, and a verdict (improved, regressed, within "
      "noise: also a change within the drift inside either run; inconclusive: a side measured under contention). "
      "The first run is "
      "the baseline. Training runs (tach bench --train) compare step latency and throughput; --by exec (or "
      "gradient_checkpointing, method, dtype, ...) compares the values of one axis, within one run or across runs. "
      "Eval runs (tach eval: accuracy, seqeval's entity scores, SQuAD exact match and F1) compare their scores, in "
      "percentage points");
  sub->add_option("runs", opt->runs, "Run directories (runs/<id>), the baseline first; one run with --by")
      ->required()
      ->expected(1, -1);
  sub->add_option("--by", opt->by,
                  "Compare the values of this axis: engine (tach bench --engine: the first engine of the run is the "
                  "baseline), variant (a tach shrink run's variants: f32, int8, heads:0.5, ...), exec, "
                  "gradient_checkpointing, method, dtype, device, threads, seq_len, batch (points differing only there "
                  "are matched; the first value seen is the baseline). "
                  "Default: whole point ids across runs, or the one axis two runs differ in");
  sub->add_option("--format", opt->format, "table | md | csv | json (schema tach.compare/1)")->capture_default_str();
  sub->add_option("--noise-threshold", opt->noise_threshold_pct,
                  "Percent: a significant change smaller than this is within noise")
      ->capture_default_str();
  sub->add_option("--confidence", opt->confidence, "Of the bootstrap interval")->capture_default_str();
  sub->add_option("--resamples", opt->resamples, "Bootstrap resamples per point")->capture_default_str();
  sub->add_option("--seed", opt->seed, "Seed of the resampling (results are deterministic)")->capture_default_str();
  sub->add_option("--fail-on-regression", opt->fail_on_regression_pct,
                  "Percent, 0 or more: exit with status 4 when a point regressed by more than this (for CI)");
  sub->add_option("--html", opt->html, "Where to write the HTML page (self-contained: opens from disk)")
      ->capture_default_str();
  sub->add_flag("--no-html", opt->no_html, "Write no HTML page");
  return {sub, [opt] { return run_compare(*opt); }};
}

}  // namespace tach::cli
