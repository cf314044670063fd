#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace tach::report {

namespace {

// Okabe & Ito (2008): blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow, black.
const char* const kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
const char* const kMarkers[] = {"circle", "square", "diamond", "triangle"};

std::string fmt(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.3gG", v / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (a >= 1e4) std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else if (a >= 100) std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a >= 10) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v * 100);
  return buf;
}

// "Nice" ticks over [lo, hi]: steps of 1, 2 or 5 × 10^k.
std::vector<double> ticks(double lo, double hi, int target = 5) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  // Whole multiples of the step, each computed afresh so rounding does not build up.
  for (auto k = int64_t(std::ceil(lo / step)); double(k) * step <= hi + step * 1e-9; ++k) t.push_back(double(k) * step);
  return t;
}

std::string marker(const std::string& shape, double x, double y, const std::string& colour) {
  std::ostringstream s;
  if (shape == "square")
    s << "<rect x='" << x - 3.5 << "' y='" << y - 3.5 << "' width='7' height='7' fill='" << colour << "'";
  else if (shape == "diamond")
    s << "<path d='M" << x << " " << y - 4.5 << " L" << x + 4.5 << " " << y << " L" << x << " " << y + 4.5 << " L"
      << x - 4.5 << " " << y << " Z' fill='" << colour << "'";
  else if (shape == "triangle")
    s << "<path d='M" << x << " " << y - 4.5 << " L" << x + 4.5 << " " << y + 3.5 << " L" << x - 4.5 << " " << y + 3.5
      << " Z' fill='" << colour << "'";
  else s << "<circle cx='" << x << "' cy='" << y << "' r='3.8' fill='" << colour << "'";
  return s.str();
}

}  // namespace

// Past eight series the colours repeat, and the marker shifts (k + k / 8) so no two series share both.
const char* series_colour(size_t i) { return kPalette[i % 8]; }

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string line_chart(const LineChartSpec& spec, const std::vector<Series>& series) {
  // The legend goes under the plot, one line per series, so it never covers a point.
  const double W = spec.width, R = 12, T = 28, B = 46 + 15 * double(series.size());
  const double H = spec.height + 15 * double(series.size());
  // The y label runs up the plot's height: wrapped into lines that fit it, the margin widened for each.
  const std::vector<std::string> y_label = wrap_to_width(spec.y_label, H - T - B, kChartFontPx);
  const double L = 62 + 13 * double(y_label.size() - 1);
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  auto tx = [&](double x) { return spec.log2_x ? std::log2(std::max(x, 1e-12)) : x; };
  for (const auto& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, tx(s.x[i])), x1 = std::max(x1, tx(s.x[i]));
      y0 = std::min(y0, i < s.y_lo.size() ? s.y_lo[i] : s.y[i]);
      y1 = std::max(y1, i < s.y_hi.size() ? s.y_hi[i] : s.y[i]);
    }
  std::ostringstream o;
  o << "<svg class='chart line-chart' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H << "' width='"
    << W << "' height='" << H << "' role='img' aria-label='" << escape_html(spec.title) << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' class='chart-title'>" << escape_html(spec.title)
    << "</text>";
  if (!std::isfinite(x0)) {
    o << "<text x='" << W / 2 << "' y='" << H / 2 << "' text-anchor='middle' class='no-data'>no data</text></svg>";
    return o.str();
  }
  if (spec.zero_y) y0 = std::min(0.0, y0);
  if (y1 <= y0) y1 = y0 + 1;
  const double y_pad = (y1 - y0) * 0.05;
  y1 += y_pad;
  if (!spec.zero_y && spec.pad_x) y0 -= y_pad;  // the lowest point's marker above the axis, not cut by it
  if (x1 <= x0) x0 -= 0.5, x1 += 0.5;
  if (spec.pad_x) {
    const double x_pad = (x1 - x0) * 0.06;
    x0 -= x_pad, x1 += x_pad;
  }
  auto px = [&](double x) { return L + (tx(x) - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return T + (1 - (y - y0) / (y1 - y0)) * (H - T - B); };
  // Axes, grid, ticks.
  o << "<g class='axes' stroke='#999' stroke-width='1'>";
  o << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B << "'/>";
  o << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B << "'/></g>";
  const std::vector<double> yt = ticks(y0, y1);
  const std::vector<std::string> y_text = tick_labels(yt);
  for (size_t i = 0; i < yt.size(); ++i) {
    o << "<line x1='" << L << "' x2='" << W - R << "' y1='" << py(yt[i]) << "' y2='" << py(yt[i])
      << "' stroke='#eee'/>";
    o << "<text x='" << L - 6 << "' y='" << py(yt[i]) + 4 << "' text-anchor='end' class='tick'>" << y_text[i]
      << "</text>";
  }
  std::vector<double> xt;
  if (spec.log2_x) {
    for (int e = int(std::ceil(x0)); e <= x1 + 1e-9; ++e) xt.push_back(std::pow(2.0, e));
  } else {
    xt = ticks(x0, x1);
  }
  const std::vector<std::string> x_text = tick_labels(xt);
  for (size_t i = 0; i < xt.size(); ++i)
    o << "<text x='" << px(xt[i]) << "' y='" << H - B + 16 << "' text-anchor='middle' class='tick'>" << x_text[i]
      << "</text>";
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - B + 32 << "' text-anchor='middle' class='axis-label'>"
    << escape_html(spec.x_label) << "</text>";
  for (size_t i = 0; i < y_label.size(); ++i)
    o << "<text transform='translate(" << 14 + 13 * double(i) << "," << (T + H - B) / 2
      << ") rotate(-90)' text-anchor='middle' class='axis-label'>" << escape_html(y_label[i]) << "</text>";
  // Series.
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const std::string c = series_colour(k), shape = kMarkers[(k + k / 8) % 4];
    o << "<g class='series' data-name='" << escape_html(s.name) << "'>";
    std::ostringstream pts;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) pts << px(s.x[i]) << "," << py(s.y[i]) << " ";
    o << "<polyline fill='none' stroke='" << c << "' stroke-width='1.8'" << (s.markers ? "" : " stroke-dasharray='5 3'")
      << " points='" << pts.str() << "'/>";
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i]) || !s.markers) continue;
      if (i < s.y_lo.size() && i < s.y_hi.size())
        o << "<line x1='" << px(s.x[i]) << "' x2='" << px(s.x[i]) << "' y1='" << py(s.y_lo[i]) << "' y2='"
          << py(s.y_hi[i]) << "' stroke='" << c << "'/>";
      o << marker(shape, px(s.x[i]), py(s.y[i]), c) << "><title>" << escape_html(s.name) << ": " << fmt(s.x[i]) << ", "
        << fmt(s.y[i]) << "</title>"
        << (shape == "square"   ? "</rect>"
            : shape == "circle" ? "</circle>"
                                : "</path>");
    }
    o << "</g>";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    const double ly = H - B + 48 + double(k) * 15;
    if (series[k].markers) o << marker(kMarkers[(k + k / 8) % 4], L + 12, ly, series_colour(k)) << "/>";
    else
      o << "<line x1='" << L + 4 << "' x2='" << L + 20 << "' y1='" << ly << "' y2='" << ly << "' stroke='"
        << series_colour(k) << "' stroke-width='1.8' stroke-dasharray='5 3'/>";
    o << "<text x='" << L + 22 << "' y='" << ly + 4 << "' class='legend'>" << escape_html(series[k].name) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

std::string distribution_chart(const DistributionChartSpec& spec, const std::vector<Distribution1D>& groups) {
  // The left margin holds the longest label whole ("heads:0.5 batch 32" is wider than "batch 32").
  double widest_label = 0;
  for (const auto& g : groups) widest_label = std::max(widest_label, text_width_px(g.name, kChartFontPx));
  const double W = spec.width, L = std::max(90.0, widest_label + 16), R = 14, T = 28, B = 40;
  const double row = 56;
  const double H = T + B + row * double(std::max<size_t>(groups.size(), 1));
  double v0 = std::numeric_limits<double>::infinity(), v1 = -v0;
  for (const auto& g : groups)
    for (double v : g.values) v0 = std::min(v0, v), v1 = std::max(v1, v);
  std::ostringstream o;
  o << "<svg class='chart distribution-chart' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H
    << "' width='" << W << "' height='" << H << "' role='img' aria-label='" << escape_html(spec.title) << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' class='chart-title'>" << escape_html(spec.title)
    << "</text>";
  if (!std::isfinite(v0)) {
    o << "<text x='" << W / 2 << "' y='" << H / 2
      << "' text-anchor='middle' class='no-data'>no raw samples</text></svg>";
    return o.str();
  }
  const double pad = std::max((v1 - v0) * 0.08, std::abs(v1) * 1e-3 + 1e-12);
  v0 = std::max(v0 - pad, spec.floor), v1 += pad;  // nothing below what can occur
  auto px = [&](double v) { return L + (v - v0) / (v1 - v0) * (W - L - R); };
  const std::vector<double> vt = ticks(v0, v1);
  const std::vector<std::string> v_text = tick_labels(vt);
  for (size_t i = 0; i < vt.size(); ++i) {
    o << "<line x1='" << px(vt[i]) << "' x2='" << px(vt[i]) << "' y1='" << T << "' y2='" << H - B
      << "' stroke='#eee'/>";
    o << "<text x='" << px(vt[i]) << "' y='" << H - B + 16 << "' text-anchor='middle' class='tick'>" << v_text[i]
      << "</text>";
  }
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - 8 << "' text-anchor='middle' class='axis-label'>"
    << escape_html(spec.value_label) << "</text>";
  for (size_t k = 0; k < groups.size(); ++k) {
    const auto& g = groups[k];
    const std::string c = series_colour(k);
    const double cy = T + row * (double(k) + 0.5);
    o << "<g class='series' data-name='" << escape_html(g.name) << "'>";
    o << "<text x='" << L - 8 << "' y='" << cy + 4 << "' text-anchor='end' class='legend'>" << escape_html(g.name)
      << "</text>";
    std::vector<double> v = g.values;
    std::sort(v.begin(), v.end());
    if (!v.empty()) {
      // A floor under the bandwidth keeps identical samples drawable.
      const DensityCurve kde = kernel_density(v, v0, v1, spec.floor, 80, (v1 - v0) * 0.01);
      const double peak = *std::max_element(kde.density.begin(), kde.density.end());
      std::ostringstream path;
      for (size_t i = 0; i < kde.at.size(); ++i)
        path << (i ? " L" : "M") << px(kde.at[i]) << " " << cy - kde.density[i] / peak * row * 0.42;
      for (size_t i = kde.at.size(); i-- > 0;)
        path << " L" << px(kde.at[i]) << " " << cy + kde.density[i] / peak * row * 0.42;
      o << "<path d='" << path.str() << " Z' fill='" << c << "' fill-opacity='0.25' stroke='" << c << "'/>";
      for (double x : v) o << "<circle cx='" << px(x) << "' cy='" << cy << "' r='1.6' fill='" << c << "'/>";
      const double med = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      o << "<line x1='" << px(med) << "' x2='" << px(med) << "' y1='" << cy - row * 0.42 << "' y2='" << cy + row * 0.42
        << "' stroke='#000' stroke-width='2'><title>" << escape_html(g.name) << " median " << fmt(med) << " ("
        << v.size() << " samples)</title></line>";
    }
    o << "</g>";
  }
  o << "</svg>";
  return o.str();
}

std::string change_chart(const std::string& title, const std::vector<ChangeBar>& bars, double threshold) {
  const double W = 620, L = 170, R = 90, T = 28, B = 40, row = 22;
  const double H = T + B + row * double(std::max<size_t>(bars.size(), 1));
  double lo = -threshold * 2, hi = threshold * 2;
  for (const auto& b : bars) lo = std::min({lo, b.lo, b.change}), hi = std::max({hi, b.hi, b.change});
  const double pad = (hi - lo) * 0.06;
  lo -= pad, hi += pad;
  auto px = [&](double v) { return L + (v - lo) / (hi - lo) * (W - L - R); };
  std::ostringstream o;
  o << "<svg class='chart change-chart' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H
    << "' width='" << W << "' height='" << H << "' role='img' aria-label='" << escape_html(title) << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' class='chart-title'>" << escape_html(title) << "</text>";
  o << "<rect x='" << px(-threshold) << "' y='" << T << "' width='" << px(threshold) - px(-threshold) << "' height='"
    << H - T - B << "' fill='#ddd'><title>within noise: |change| below " << pct(threshold) << "</title></rect>";
  for (double t : ticks(lo, hi)) {
    o << "<line x1='" << px(t) << "' x2='" << px(t) << "' y1='" << T << "' y2='" << H - B << "' stroke='#eee'/>";
    o << "<text x='" << px(t) << "' y='" << H - B + 16 << "' text-anchor='middle' class='tick'>" << pct(t) << "</text>";
  }
  o << "<line x1='" << px(0) << "' x2='" << px(0) << "' y1='" << T << "' y2='" << H - B << "' stroke='#444'/>";
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - 8
    << "' text-anchor='middle' class='axis-label'>latency change (new / baseline - 1), with its interval</text>";
  for (size_t k = 0; k < bars.size(); ++k) {
    const auto& b = bars[k];
    // Colour by verdict (blue improved, vermillion regressed, grey otherwise), and the word beside it.
    const std::string c = b.verdict == "improved" ? "#0072B2" : b.verdict == "regressed" ? "#D55E00" : "#888888";
    const double cy = T + row * (double(k) + 0.5);
    o << "<g class='series' data-name='" << escape_html(b.label) << "'>";
    o << "<text x='" << L - 8 << "' y='" << cy + 4 << "' text-anchor='end' class='legend'>" << escape_html(b.label)
      << "</text>";
    o << "<rect x='" << std::min(px(0), px(b.change)) << "' y='" << cy - 6 << "' width='"
      << std::abs(px(b.change) - px(0)) << "' height='12' fill='" << c << "'><title>" << escape_html(b.label) << ": "
      << pct(b.change) << " [" << pct(b.lo) << ", " << pct(b.hi) << "] " << b.verdict << "</title></rect>";
    o << "<line x1='" << px(b.lo) << "' x2='" << px(b.hi) << "' y1='" << cy << "' y2='" << cy << "' stroke='#000'/>";
    o << "<text x='" << W - R + 6 << "' y='" << cy + 4 << "' class='legend'>" << escape_html(b.verdict) << "</text>";
    o << "</g>";
  }
  o << "</svg>";
  return o.str();
}

std::string bar_chart(const std::string& title, const std::vector<std::string>& labels,
                      const std::vector<double>& values, const std::string& value_label) {
  const double W = 560, L = 200, R = 80, T = 28, B = 36, row = 18;
  const double H = T + B + row * double(std::max<size_t>(labels.size(), 1));
  double hi = 0;
  for (double v : values) hi = std::max(hi, v);
  if (hi <= 0) hi = 1;
  auto px = [&](double v) { return L + v / hi * (W - L - R); };
  std::ostringstream o;
  o << "<svg class='chart bar-chart' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H << "' width='"
    << W << "' height='" << H << "' role='img' aria-label='" << escape_html(title) << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' class='chart-title'>" << escape_html(title) << "</text>";
  for (size_t k = 0; k < labels.size(); ++k) {
    const double cy = T + row * (double(k) + 0.5);
    o << "<g class='series' data-name='" << escape_html(labels[k]) << "'><text x='" << L - 6 << "' y='" << cy + 4
      << "' text-anchor='end' class='legend'>" << escape_html(labels[k]) << "</text><rect x='" << L << "' y='" << cy - 6
      << "' width='" << px(values[k]) - L << "' height='12' fill='" << series_colour(0) << "'><title>"
      << escape_html(labels[k]) << ": " << fmt(values[k]) << "</title></rect><text x='" << px(values[k]) + 4 << "' y='"
      << cy + 4 << "' class='tick'>" << fmt(values[k]) << "</text></g>";
  }
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - 8 << "' text-anchor='middle' class='axis-label'>"
    << escape_html(value_label) << "</text></svg>";
  return o.str();
}

std::string heatmap(const std::string& title, const std::vector<std::string>& row_labels,
                    const std::vector<std::string>& col_labels, const std::vector<std::vector<double>>& level,
                    const std::vector<std::vector<std::string>>& text) {
  const double L = 170, T = 70, cw = 92, ch = 22;
  // Wide enough for the title too (about 7 px per character at the title's size).
  const double W = std::max(L + cw * double(col_labels.size()) + 10, 7.0 * double(title.size()) + 20);
  const double H = T + ch * double(row_labels.size()) + 10;
  std::ostringstream o;
  o << "<svg class='chart heatmap' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H << "' width='"
    << W << "' height='" << H << "' role='img' aria-label='" << escape_html(title) << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' class='chart-title'>" << escape_html(title) << "</text>";
  for (size_t c = 0; c < col_labels.size(); ++c)
    o << "<text x='" << L + cw * (double(c) + 0.5) << "' y='" << T - 8 << "' text-anchor='middle' class='tick'>"
      << escape_html(col_labels[c]) << "</text>";
  for (size_t r = 0; r < row_labels.size(); ++r) {
    o << "<g class='series' data-name='" << escape_html(row_labels[r]) << "'><text x='" << L - 6 << "' y='"
      << T + ch * (double(r) + 0.5) + 4 << "' text-anchor='end' class='legend'>" << escape_html(row_labels[r])
      << "</text>";
    for (size_t c = 0; c < col_labels.size(); ++c) {
      const double v = r < level.size() && c < level[r].size() ? level[r][c] : std::nan("");
      const std::string fill = std::isfinite(v) ? heat_fill(v) : "#ffffff";
      o << "<rect x='" << L + cw * double(c) << "' y='" << T + ch * double(r) << "' width='" << cw - 2 << "' height='"
        << ch - 2 << "' fill='" << fill << "' stroke='#ccc'/>";
      const std::string label = r < text.size() && c < text[r].size() ? text[r][c] : "";
      // The colour as a style: a page's or figure's stylesheet (text{fill:...}) outranks a fill attribute.
      o << "<text x='" << L + cw * (double(c) + 0.5) << "' y='" << T + ch * (double(r) + 0.5) + 4
        << "' text-anchor='middle' class='tick' style='fill:" << text_colour_on(fill) << "'>" << escape_html(label)
        << "</text>";
    }
    o << "</g>";
  }
  o << "</svg>";
  return o.str();
}

std::string roofline_chart(const std::string& title, const std::vector<RooflinePoint>& points, double peak, double bw) {
  const double W = 560, H = 360, L = 64, R = 16, T = 28, B = 46;
  double x0 = 1e-2, x1 = 1e3, y0 = 1e7, y1 = std::max(peak, 1e9) * 2;
  for (const auto& p : points)
    if (p.intensity > 0 && p.flops_per_s > 0) {
      x0 = std::min(x0, p.intensity / 2), x1 = std::max(x1, p.intensity * 2);
      y0 = std::min(y0, p.flops_per_s / 2);
    }
  const double lx0 = std::log10(x0), lx1 = std::log10(x1), ly0 = std::log10(y0), ly1 = std::log10(y1);
  auto px = [&](double x) { return L + (std::log10(x) - lx0) / (lx1 - lx0) * (W - L - R); };
  auto py = [&](double y) { return T + (1 - (std::log10(y) - ly0) / (ly1 - ly0)) * (H - T - B); };
  std::ostringstream o;
  o << "<svg class='chart roofline' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H << "' width='"
    << W << "' height='" << H << "' role='img' aria-label='" << escape_html(title) << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' class='chart-title'>" << escape_html(title) << "</text>";
  for (int e = int(std::ceil(lx0)); e <= lx1; ++e)
    o << "<line x1='" << px(std::pow(10, e)) << "' x2='" << px(std::pow(10, e)) << "' y1='" << T << "' y2='" << H - B
      << "' stroke='#eee'/><text x='" << px(std::pow(10, e)) << "' y='" << H - B + 16
      << "' text-anchor='middle' class='tick'>" << fmt(std::pow(10, e)) << "</text>";
  for (int e = int(std::ceil(ly0)); e <= ly1; ++e)
    o << "<line x1='" << L << "' x2='" << W - R << "' y1='" << py(std::pow(10, e)) << "' y2='" << py(std::pow(10, e))
      << "' stroke='#eee'/><text x='" << L - 6 << "' y='" << py(std::pow(10, e)) + 4
      << "' text-anchor='end' class='tick'>" << fmt(std::pow(10, e) / 1e9) << "</text>";
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - 8
    << "' text-anchor='middle' class='axis-label'>arithmetic intensity (FLOP per byte, declared by the ops)</text>";
  o << "<text transform='translate(14," << (T + H - B) / 2
    << ") rotate(-90)' text-anchor='middle' class='axis-label'>achieved GFLOP/s</text>";
  if (peak > 0 && bw > 0) {
    const double knee = peak / bw;  // intensity where the memory slope meets the compute peak
    const double start = std::max(x0, y0 / bw);
    o << "<polyline class='ceiling' fill='none' stroke='#000' stroke-width='1.5' points='" << px(start) << ","
      << py(bw * start) << " " << px(knee) << "," << py(peak) << " " << px(x1) << "," << py(peak) << "'/>";
    o << "<text x='" << W - R - 4 << "' y='" << py(peak) - 5 << "' text-anchor='end' class='tick'>compute peak "
      << fmt(peak / 1e9) << " GFLOP/s</text>";
    o << "<text x='" << px(start) + 6 << "' y='" << py(bw * start) - 6 << "' class='tick'>memory " << fmt(bw / 1e9)
      << " GB/s</text>";
  }
  for (size_t k = 0; k < points.size(); ++k) {
    const auto& p = points[k];
    if (!(p.intensity > 0 && p.flops_per_s > 0)) continue;
    const std::string c = series_colour(k), shape = kMarkers[(k + k / 8) % 4];
    o << "<g class='series' data-name='" << escape_html(p.name) << "'>"
      << marker(shape, px(p.intensity), py(p.flops_per_s), c) << "><title>" << escape_html(p.name) << ": "
      << fmt(p.intensity) << " FLOP/B, " << fmt(p.flops_per_s / 1e9) << " GFLOP/s</title>"
      << (shape == "square"   ? "</rect>"
          : shape == "circle" ? "</circle>"
                              : "</path>")
      << "<text x='" << px(p.intensity) + 6 << "' y='" << py(p.flops_per_s) + 4 << "' class='legend'>"
      << escape_html(p.name) << "</text></g>";
  }
  o << "</svg>";
  return o.str();
}

std::string stacked_columns(const std::string& title, const std::vector<std::string>& x_labels,
                            const std::vector<std::string>& parts, const std::vector<std::vector<double>>& values,
                            const std::string& x_label, const std::string& y_label) {
  // values[part][column]
  const double W = 560, L = 62, R = 12, T = 28, B = 46 + 15 * double(parts.size());
  const double H = 280 + 15 * double(parts.size());
  const size_t n = x_labels.size();
  double top = 0;
  for (size_t c = 0; c < n; ++c) {
    double sum = 0;
    for (const auto& v : values) sum += c < v.size() ? v[c] : 0;
    top = std::max(top, sum);
  }
  if (top <= 0) top = 1;
  top *= 1.05;
  const double cw = n ? (W - L - R) / double(n) : 1;
  auto py = [&](double y) { return T + (1 - y / top) * (H - T - B); };
  std::ostringstream o;
  o << "<svg class='chart stacked-columns' xmlns='http://www.w3.org/2000/svg' viewBox='0 0 " << W << " " << H
    << "' width='" << W << "' height='" << H << "' role='img' aria-label='" << escape_html(title) << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' class='chart-title'>" << escape_html(title) << "</text>";
  const std::vector<double> yt = ticks(0, top);
  const std::vector<std::string> y_text = tick_labels(yt);
  for (size_t i = 0; i < yt.size(); ++i)
    o << "<line x1='" << L << "' x2='" << W - R << "' y1='" << py(yt[i]) << "' y2='" << py(yt[i])
      << "' stroke='#eee'/><text x='" << L - 6 << "' y='" << py(yt[i]) + 4 << "' text-anchor='end' class='tick'>"
      << y_text[i] << "</text>";
  const size_t every = std::max<size_t>(1, n / 8);
  for (size_t c = 0; c < n; c += every)
    o << "<text x='" << L + cw * (double(c) + 0.5) << "' y='" << H - B + 16 << "' text-anchor='middle' class='tick'>"
      << escape_html(x_labels[c]) << "</text>";
  std::vector<double> base(n, 0);
  for (size_t k = 0; k < parts.size(); ++k) {
    o << "<g class='series' data-name='" << escape_html(parts[k]) << "'>";
    for (size_t c = 0; c < n; ++c) {
      const double v = c < values[k].size() ? values[k][c] : 0;
      o << "<rect x='" << L + cw * double(c) + cw * 0.1 << "' y='" << py(base[c] + v) << "' width='" << cw * 0.8
        << "' height='" << py(base[c]) - py(base[c] + v) << "' fill='" << series_colour(k) << "'><title>"
        << escape_html(x_labels[c]) << " " << escape_html(parts[k]) << ": " << fmt(v) << "</title></rect>";
      base[c] += v;
    }
    o << "</g>";
  }
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - B + 32 << "' text-anchor='middle' class='axis-label'>"
    << escape_html(x_label) << "</text><text transform='translate(14," << (T + H - B) / 2
    << ") rotate(-90)' text-anchor='middle' class='axis-label'>" << escape_html(y_label) << "</text>";
  for (size_t k = 0; k < parts.size(); ++k) {
    const double ly = H - B + 48 + double(k) * 15;
    o << "<rect x='" << L + 8 << "' y='" << ly - 5 << "' width='9' height='9' fill='" << series_colour(k)
      << "'/><text x='" << L + 22 << "' y='" << ly + 4 << "' class='legend'>" << escape_html(parts[k]) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

}  // namespace tach::report
