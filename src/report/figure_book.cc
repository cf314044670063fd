#include "report/figure_book.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "tach/error.h"

namespace tach::report {

namespace {

// The text styles report.html gives its charts, with a font every Debian system has.
const char* kChartStyle =
    "<style>text{font-family:'DejaVu Sans',sans-serif;font-size:11px;fill:#222}"
    ".chart-title{font-size:13px;font-weight:600}</style>";

// A chart's width and height: the attributes svg_chart.h writes on every <svg>.
int svg_attribute(const std::string& svg, const std::string& name) {
  const size_t open_end = svg.find('>');
  const size_t at = svg.find(" " + name + "='");
  check(at != std::string::npos && at < open_end, "a chart without a " + name + " attribute");
  return std::atoi(svg.c_str() + at + name.size() + 3);
}

}  // namespace

std::string standalone_svg(const std::string& chart_svg) {
  const size_t open_end = chart_svg.find('>');
  check(chart_svg.rfind("<svg", 0) == 0 && open_end != std::string::npos, "a chart that is not an <svg> element");
  return chart_svg.substr(0, open_end + 1) + kChartStyle + "<rect width='100%' height='100%' fill='#fff'/>" +
         chart_svg.substr(open_end + 1);
}

std::string figure_file_stem(const std::string& words) {
  std::string out;
  for (unsigned char c : words) {
    if (std::isalnum(c)) out += char(std::tolower(c));
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "figure" : out;
}

std::string FigureBook::unique_name(const std::string& name) const {
  auto taken = [&](const std::string& n) {
    return std::any_of(figures_.begin(), figures_.end(), [&](const ReportFigure& f) { return f.name == n; });
  };
  if (!taken(name)) return name;
  for (int i = 2;; ++i)
    if (!taken(name + "_" + std::to_string(i))) return name + "_" + std::to_string(i);
}

const std::string& FigureBook::add(const std::string& name, const std::string& title, const std::string& chart_svg,
                                   std::vector<std::string> key_numbers) {
  figures_.push_back({unique_name(name), title, standalone_svg(chart_svg), std::move(key_numbers)});
  return chart_svg;
}

void FigureBook::add_grid(const std::string& name, const std::string& title, const std::vector<std::string>& chart_svgs,
                          int columns, std::vector<std::string> key_numbers) {
  check(columns > 0 && !chart_svgs.empty(), "a figure grid needs charts and columns");
  // Cells as large as the largest chart, charts placed at their cell's top-left corner.
  int cell_w = 0, cell_h = 0;
  for (const auto& s : chart_svgs)
    cell_w = std::max(cell_w, svg_attribute(s, "width")), cell_h = std::max(cell_h, svg_attribute(s, "height"));
  const int gap = 12, rows = int((chart_svgs.size() + columns - 1) / columns);
  const int W = columns * cell_w + (columns - 1) * gap, H = rows * cell_h + (rows - 1) * gap;
  std::ostringstream o;
  o << "<svg class='chart figure-grid' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H << "' width='"
    << W << "' height='" << H << "'>";
  for (size_t i = 0; i < chart_svgs.size(); ++i)
    o << "<g transform='translate(" << int(i % columns) * (cell_w + gap) << "," << int(i / columns) * (cell_h + gap)
      << ")'>" << chart_svgs[i] << "</g>";
  o << "</svg>";
  figures_.push_back({unique_name(name), title, standalone_svg(o.str()), std::move(key_numbers)});
}

}  // namespace tach::report
