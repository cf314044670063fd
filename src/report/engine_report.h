// Other engines beside tach's own (tach bench --engine): how each stands against the run's first
// engine, point by point, which the findings (summary.txt) and report.html's engine panel share.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "tach/bench.h"

namespace tach::report {

class FigureBook;

// One engine against the run's baseline engine (the first in the run: tach when it ran), over the
// points both measured (the same id once the engine is left out).
struct EngineStanding {
  std::string engine, baseline;
  int pairs = 0, wins = 0;  // pairs measured without contention; where this engine's throughput is higher
  int contended = 0;        // pairs left out: either side measured under contention
  // The throughput ratios (this engine's samples/s over the baseline's; > 1: faster) at their
  // extremes, with the points (ids without the engine) where they were measured.
  double best = 0, worst = 0;
  std::string best_point, worst_point;
  const PointResult* one_time = nullptr;  // this engine's first ok point: its one-time costs
};

// The engines of a run in the order first seen (the baseline first). Empty for a run of tach alone.
std::vector<std::string> run_engines(const std::vector<PointResult>& points);
// One standing per engine after the baseline; empty when the run has one engine.
std::vector<EngineStanding> engine_standings(const std::vector<PointResult>& points);

// The findings' lines for other engines (each "- ..." and a newline): a disagreement with tach's
// outputs first (its timings are of a different computation), then each engine's standing: where
// it wins, by how much, and its one-time costs.
void engine_findings(std::ostringstream& s, const std::vector<PointResult>& points);

// report.html's engine panel: latency and throughput per engine per point, the speed-up against
// the baseline engine with tach compare --by engine's verdict in its words (from run_dir's
// results.jsonl), the outputs' agreement, and each engine's one-time costs. Nothing for a run of
// one engine.
void engine_section(std::ostringstream& h, FigureBook& figs, const std::vector<PointResult>& points,
                    const std::string& run_dir);

// Other engines' accuracy passes (tach bench --engine ... --accuracy; accuracy.json's "engines")
// against tach's pass of the same device, dtype and examples (`tach`):
//   one engine's finding: "onnxruntime's accuracy equals tach's (0.9106 on 872 examples, cpu/f32;
//   0 predictions differ)" (a per-token head's: "torch's entity F1 equals tach's (0.8123 on 12
//   sentences, cpu/f32; 0 tags differ)", "... SQuAD F1 ... questions ...; 1 answer differs"), the
//   difference when not, the reason when it failed;
std::string engine_accuracy_line(const EngineAccuracy& e, const std::vector<AccuracyResult>& tach);
//   the findings' lines (each "- ..." and a newline);
void engine_accuracy_findings(std::ostringstream& s, const std::vector<EngineAccuracy>& engines,
                              const std::vector<AccuracyResult>& tach);
//   summary.txt's and the terminal's table, tach's passes first ("" when no other engine ran);
std::string engine_accuracy_text(const std::vector<EngineAccuracy>& engines, const std::vector<AccuracyResult>& tach);
//   the engine panel's table in report.html (nothing when no other engine ran).
void engine_accuracy_html(std::ostringstream& h, const std::vector<EngineAccuracy>& engines,
                          const std::vector<AccuracyResult>& tach);
// A per-token head's scores in words, as tach eval prints them: "entity F1 0.8123, precision
// 0.8010, recall 0.8239, word accuracy 0.9612" (seqeval, fractions) or "exact match 71.43%, F1
// 80.12%" (SQuAD, percent).
std::string task_scores_text(const std::string& task, const std::vector<std::pair<std::string, double>>& scores);

}  // namespace tach::report
