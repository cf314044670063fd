// The decisions the charts are drawn from (svg_chart.h): tick label formats, text widths and
// wrapping, the heat scale and the text that reads on it, and the violins' densities.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "report/svg_chart.h"

namespace tach::report {

std::vector<std::string> tick_labels(const std::vector<double>& ticks) {
  double top = 0;
  for (double t : ticks) top = std::max(top, std::abs(t));
  const double scale = top >= 1e9 ? 1e9 : top >= 1e6 ? 1e6 : top >= 1e4 ? 1e3 : 1;
  const char* suffix = top >= 1e9 ? "G" : top >= 1e6 ? "M" : top >= 1e4 ? "k" : "";
  // The fewest decimals that write every tick exactly (to a millionth of the smallest step).
  double step = 0;
  for (size_t i = 1; i < ticks.size(); ++i) {
    const double d = std::abs(ticks[i] - ticks[i - 1]) / scale;
    if (d > 0 && (step == 0 || d < step)) step = d;
  }
  int decimals = 0;
  for (; decimals < 6; ++decimals) {
    bool exact = true;
    const double unit = std::pow(10.0, decimals);
    for (double t : ticks) {
      const double v = t / scale;
      exact = exact && std::abs(std::round(v * unit) / unit - v) <= (step > 0 ? step : std::abs(v) + 1) * 1e-6;
    }
    if (exact) break;
  }
  std::vector<std::string> out;
  for (double t : ticks) {
    char buf[48];
    double v = t / scale;
    if (std::abs(v) < 0.5 * std::pow(10.0, -decimals)) v = 0;  // no "-0"
    std::snprintf(buf, sizeof buf, "%.*f%s", decimals, v, v == 0 ? "" : suffix);
    out.push_back(buf);
  }
  return out;
}

namespace {

// DejaVu Sans advance widths of ASCII 32..126, in font units (2048 per em), from its hmtx table.
constexpr int kAdvance[95] = {
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,  1303, 1303, 1303,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430, 1577, 1294,
    1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403,
    1251, 1403, 799,  690,  799,  1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186,
    569,  1995, 1298, 1253, 1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};

struct Rgb {
  double r, g, b;
};

Rgb parse_hex(const std::string& c) {
  const auto v = std::strtoul(c.c_str() + (c.empty() || c[0] != '#' ? 0 : 1), nullptr, 16);
  return {double((v >> 16) & 255), double((v >> 8) & 255), double(v & 255)};
}

// WCAG 2 relative luminance of an sRGB colour.
double luminance(const Rgb& c) {
  const auto lin = [](double v) {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
}

}  // namespace

double text_width_px(const std::string& text, double font_px) {
  double units = 0;
  for (unsigned char c : text) {
    if (c >= 32 && c < 127) units += kAdvance[c - 32];
    else if (c >= 0xC0 || c < 0x80) units += 1303;  // a character's first byte; continuation bytes add nothing
  }
  return units / 2048 * font_px;
}

std::vector<std::string> wrap_to_width(const std::string& text, double max_px, double font_px) {
  std::vector<std::string> lines;
  std::string line;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    const std::string joined = line.empty() ? word : line + " " + word;
    if (!line.empty() && text_width_px(joined, font_px) > max_px) {
      lines.push_back(line);
      line = word;
    } else {
      line = joined;
    }
    at = end + 1;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::string heat_fill(double level) {
  // Light (#f7fbff) to dark (#08306b) blue: lightness carries the level, so grey print keeps it.
  const double t = std::isfinite(level) ? std::clamp(level, 0.0, 1.0) : 0;
  char fill[16];
  std::snprintf(fill, sizeof fill, "#%02x%02x%02x", int(247 - t * (247 - 8)), int(251 - t * (251 - 48)),
                int(255 - t * (255 - 107)));
  return fill;
}

double contrast_ratio(const std::string& a, const std::string& b) {
  const double la = luminance(parse_hex(a)), lb = luminance(parse_hex(b));
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

std::string text_colour_on(const std::string& fill) {
  return contrast_ratio(fill, "#000000") >= contrast_ratio(fill, "#ffffff") ? "#000000" : "#ffffff";
}

DensityCurve kernel_density(const std::vector<double>& values, double lo, double hi, double floor, int steps,
                            double min_bandwidth) {
  DensityCurve c;
  if (values.empty() || steps < 1) return c;
  lo = std::max(lo, floor);
  if (hi < lo) hi = lo;
  double mean = 0, var = 0;
  for (double x : values) mean += x;
  mean /= double(values.size());
  for (double x : values) var += (x - mean) * (x - mean);
  const double sd = values.size() > 1 ? std::sqrt(var / double(values.size() - 1)) : 0;
  const double h = std::max({1.06 * sd * std::pow(double(values.size()), -0.2), min_bandwidth, 1e-12});
  for (int i = 0; i <= steps; ++i) {
    const double at = lo + (hi - lo) * i / steps;
    double d = 0;
    for (double x : values) {
      d += std::exp(-0.5 * (at - x) * (at - x) / (h * h));
      const double mirror = 2 * floor - x;  // the kernel's part below the floor, folded back
      d += std::exp(-0.5 * (at - mirror) * (at - mirror) / (h * h));
    }
    c.at.push_back(at);
    c.density.push_back(d);
  }
  return c;
}

}  // namespace tach::report
