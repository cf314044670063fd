// The number formats analyze's tables and analysis.json share: microseconds from nanoseconds,
// printf-style numbers, padded columns and byte counts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace tach::analyze {

inline double us(int64_t ns) { return double(ns) * 1e-3; }

inline std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// s cut to width (its end replaced by "...") or padded with spaces, on the right unless right.
inline std::string pad(std::string s, size_t width, bool right = false) {
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// 1024-based: "1.50 GiB", "12.00 MiB", "3.0 KiB", "512 B"; negative counts keep their sign.
inline std::string bytes_text(int64_t b) {
  const double a = double(b < 0 ? -b : b);
  const std::string sign = b < 0 ? "-" : "";
  if (a >= 1024.0 * 1024 * 1024) return sign + fmt("%.2f GiB", a / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return sign + fmt("%.2f MiB", a / (1024.0 * 1024));
  if (a >= 1024.0) return sign + fmt("%.1f KiB", a / 1024.0);
  return sign + fmt("%.0f B", a);
}

}  // namespace tach::analyze
