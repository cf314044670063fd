// The charts of a report as standalone figures: while report.html is composed, each chart drawn
// on the page is also recorded here under a file name, with the few numbers a slide should say
// beside it. tach report --png renders them (report/png_render.cc), --pptx puts them on slides.
#pragma once

#include <string>
#include <vector>

#include "tach/report.h"

namespace tach::report {

class FigureBook {
 public:
  // Records a chart (an <svg> from svg_chart.h) and returns the same markup for the page. Names
  // are file stems; a name already taken gets _2, _3, ...
  const std::string& add(const std::string& name, const std::string& title, const std::string& chart_svg,
                         std::vector<std::string> key_numbers = {});
  // A figure made of several charts in a grid (the sweep's six panels), for the files only: the
  // page shows the charts themselves.
  void add_grid(const std::string& name, const std::string& title, const std::vector<std::string>& chart_svgs,
                int columns, std::vector<std::string> key_numbers = {});

  const std::vector<ReportFigure>& figures() const { return figures_; }

 private:
  std::string unique_name(const std::string& name) const;
  std::vector<ReportFigure> figures_;
};

// A chart's <svg> as a document of its own: a white background and the page's text styles
// inlined, so a renderer without report.html's stylesheet draws it as the browser does.
std::string standalone_svg(const std::string& chart_svg);

// A file stem from words: lower case, runs of anything but letters and digits as one '_'.
std::string figure_file_stem(const std::string& words);

}  // namespace tach::report
