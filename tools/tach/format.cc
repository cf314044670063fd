#include "format.h"

#include <cstdio>

namespace tach::cli {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string significant(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fixed(b, u == 0 ? 0 : 1) + " " + units[u];
}

std::string describe_ms(const Summary& s) {
  const double k = 1e3;
  return "median " + fixed(s.median * k, 2) + " ms (min " + fixed(s.min * k, 2) + ", p90 " + fixed(s.p90 * k, 2) +
         ", max " + fixed(s.max * k, 2) + "; IQR " + fixed(s.iqr * k, 2) +
         " ms = " + fixed(100 * s.relative_spread(), 1) + "%)";
}

}  // namespace tach::cli
