// Progress on stderr for the commands that take a while (a sweep, a training run), in the style
// tach::progress_style() resolves: a bar with an ETA redrawn in place on a terminal, plain lines
// elsewhere, nothing with --no-progress. Notes and failed points are printed in every style.
#pragma once

#include <string>

#include "tach/bench.h"
#include "tach/train.h"

namespace tach::cli {

// m:ss, for elapsed times and ETAs.
std::string clock_text(double seconds);

// The sweep's observer: the bar over every point, or a line per point with its median.
BenchObserver bench_progress(bool no_progress, const BenchConfig& config);
// Clears the bar before the results are printed.
void end_bench_progress(bool no_progress);

// The training run's observer: the bar over the steps, or a line every 10 s and at the end.
TrainObserver train_progress(bool no_progress);
// Ends the bar's line after the last step.
void end_train_progress(bool no_progress);

}  // namespace tach::cli
