// Charts as inline SVG, drawn by tach itself: no script runs to draw them, so a report opens
// from disk anywhere, prints to PDF as it shows, and a test can count its series in the markup.
// Colours are the Okabe-Ito palette, distinguishable with the common colour-vision deficiencies,
// and each series also differs by marker shape, so nothing depends on colour alone.
#pragma once

#include <string>
#include <vector>

namespace tach::report {

// The i-th colour of the palette (cycles) and a marker shape name.
const char* series_colour(size_t i);

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> y_lo, y_hi;  // optional error bars (same length as y), e.g. a confidence interval
  bool markers = true;             // false: the line alone (a frontier over other series' points, never hiding them)
};

struct LineChartSpec {
  std::string title, x_label, y_label;  // labels carry units: "batch size", "latency (ms)"
  bool log2_x = false;                  // batch sizes 1, 2, 4, ...
  bool zero_y = true;                   // the y axis starts at 0
  bool pad_x = false;                   // a scatter plot: both axes padded, so a point at an extreme is drawn whole
  int width = 460, height = 300;
};

// One <svg class="chart line-chart"> with a <g class="series" data-name=...> per series (a
// polyline and one marker per point, each with a <title> giving its values).
std::string line_chart(const LineChartSpec& spec, const std::vector<Series>& series);

struct Distribution1D {
  std::string name;            // the category ("baseline", "run 1")
  std::vector<double> values;  // raw samples
};

struct DistributionChartSpec {
  std::string title, value_label;  // value_label with its unit: "batch latency (ms)"
  int width = 460, height = 220;
  double floor = 0;  // the least value that can occur (0 for times and sizes): the axis and densities stop there
};

// Horizontal violins (a kernel density estimate, Silverman's bandwidth) with the median marked
// and every sample as a dot: one <g class="series"> per distribution.
std::string distribution_chart(const DistributionChartSpec& spec, const std::vector<Distribution1D>& groups);

struct ChangeBar {
  std::string label;                  // the point id
  double change = 0, lo = 0, hi = 0;  // relative (0.05 = +5%)
  std::string verdict;                // improved | regressed | within noise | not comparable
};

// Relative changes as horizontal bars with their interval as whiskers, the ±threshold band
// shaded; one <g class="series"> per bar, coloured by verdict (and labelled in words).
std::string change_chart(const std::string& title, const std::vector<ChangeBar>& bars, double threshold);

// Horizontal bars, one <g class="series"> per bar, the value written beside each.
std::string bar_chart(const std::string& title, const std::vector<std::string>& labels,
                      const std::vector<double>& values, const std::string& value_label);

// A grid of cells shaded by level (0..1, a sequential light-to-dark blue scale, readable in grey
// too), each with its text written in it: one <g class="series"> per row.
std::string heatmap(const std::string& title, const std::vector<std::string>& row_labels,
                    const std::vector<std::string>& col_labels, const std::vector<std::vector<double>>& level,
                    const std::vector<std::vector<std::string>>& text);

// Columns stacked from parts (e.g. a step's data, forward, backward, optimizer time), one column
// per x label; one <g class="series"> per part, in the palette's order, with a legend.
std::string stacked_columns(const std::string& title, const std::vector<std::string>& x_labels,
                            const std::vector<std::string>& parts, const std::vector<std::vector<double>>& values,
                            const std::string& x_label, const std::string& y_label);

struct RooflinePoint {
  std::string name;
  double intensity = 0;  // FLOP per byte
  double flops_per_s = 0;
};

// The roofline on log-log axes: the memory slope (bandwidth × intensity) up to the compute peak,
// each op a point (one <g class="series"> per op) with its name; ceilings named with their values.
std::string roofline_chart(const std::string& title, const std::vector<RooflinePoint>& points, double peak_flops_per_s,
                           double bytes_per_s);

std::string escape_html(const std::string& s);

// The pieces the charts are drawn from, each a decision a test can check without looking.

// One axis's tick labels in one format: the same decimals on every tick (the fewest that write
// each exactly) and one suffix (k, M, G) chosen by the largest, so "8" never stands beside "16.0".
std::vector<std::string> tick_labels(const std::vector<double>& ticks);

// Text width in the charts' font (DejaVu Sans, its advance widths) at font_px; a character
// outside ASCII counts as a digit.
double text_width_px(const std::string& text, double font_px);
// Words wrapped into lines no wider than max_px (a single longer word stands on its own line).
std::vector<std::string> wrap_to_width(const std::string& text, double max_px, double font_px);
constexpr double kChartFontPx = 11;  // the charts' text (report.html and the standalone figures)

// A heat cell's fill for a level in [0, 1] ("#rrggbb", light to dark blue), and the text colour
// that reads on a fill: black or white, whichever has the larger WCAG contrast ratio with it.
std::string heat_fill(double level);
std::string text_colour_on(const std::string& fill);
double contrast_ratio(const std::string& colour_a, const std::string& colour_b);  // WCAG 2: 1 to 21

// A Gaussian kernel density (Silverman's bandwidth, floored at min_bandwidth) of `values` at
// steps + 1 points over [max(lo, floor), hi]: nothing is drawn below `floor` (0 for times), and
// the kernels' mass that would fall below it is reflected back above (the reflection method), so
// the curve neither runs below what can happen nor sags at the edge. density: relative.
struct DensityCurve {
  std::vector<double> at, density;
};
DensityCurve kernel_density(const std::vector<double>& values, double lo, double hi, double floor, int steps,
                            double min_bandwidth);

}  // namespace tach::report
