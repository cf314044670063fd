// Summaries of repeated measurements: a median and its spread, never a mean alone.
#pragma once

#include <string>
#include <vector>

namespace tach {

struct Summary {
  size_t n = 0;
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0;
  double iqr = 0;   // p75 - p25
  double mean = 0;  // reported beside the median, never instead of it
  // Relative spread: IQR / median, the figure that says how noisy the run was.
  double relative_spread() const { return median != 0 ? iqr / median : 0; }
};

// Linear interpolation between order statistics (numpy's default). Empty input → n = 0.
Summary summarize(std::vector<double> values);
double percentile(std::vector<double> sorted_values, double q);

// The cost of one reading of the steady clock, in seconds (median of many): the floor under
// any timing this process reports.
double timer_overhead_seconds();

}  // namespace tach
