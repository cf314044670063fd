// Numbers as the report room writes them in prose: printf formats, and no "-0.0".
#pragma once

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

// A fraction of a measured ceiling (MFU, GEMM efficiency) as a percentage in `format`. Against a
// ceiling measured under load the figure says so, and one above 100% is no efficiency at all (the
// ceiling was too low), so only the caveat is printed. "-": none (fraction < 0).
inline std::string of_ceiling(double fraction, bool ceiling_under_load, const char* format = "%.0f%%") {
  if (fraction < 0) return "-";
  if (ceiling_under_load && fraction > 1) return "ceiling measured under load, not trusted";
  return fmt(format, 100 * fraction) + (ceiling_under_load ? " (ceiling measured under load)" : "");
}

}  // namespace tach::report
