// Numbers as the report room writes them: printf formats, and no "-0.0" in prose.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace tach::report {

inline std::string fmt(const char* format, double v) {
  if (std::fabs(v) < 1e-9) v = 0;  // no "-0.0"
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// `v` with exactly `decimals` digits after the point, as printf's "%.*f" writes it: fixed_text(0.5, 3)
// is "0.500", nan "nan". Unlike fmt, a tiny negative keeps its sign ("-0.000"): tables and files
// that always wrote it so stay byte for byte the same.
inline std::string fixed_text(double v, int decimals) {
  const int length = std::snprintf(nullptr, 0, "%.*f", decimals, v);
  std::string text(size_t(std::max(length, 0)), '\0');
  std::snprintf(text.data(), text.size() + 1, "%.*f", decimals, v);  // writes the '\0' past the end
  return text;
}

// A fraction of a measured ceiling (MFU, GEMM efficiency) as a percentage in `format`. Against a
// ceiling measured under load the figure says so, and one above 100% is no efficiency at all (the
// ceiling was too low), so only the caveat is printed. "-": none (fraction < 0).
inline std::string of_ceiling(double fraction, bool ceiling_under_load, const char* format = "%.0f%%") {
  if (fraction < 0) return "-";
  if (ceiling_under_load && fraction > 1) return "ceiling measured under load, not trusted";
  return fmt(format, 100 * fraction) + (ceiling_under_load ? " (ceiling measured under load)" : "");
}

}  // namespace tach::report
