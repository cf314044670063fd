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

}  // namespace tach::report
