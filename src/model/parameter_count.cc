#include "tach/parameter_count.h"

#include <cmath>
#include <cstdio>

namespace tach {

std::string parameter_count_text(int64_t parameters) {
  if (parameters < 1000) return std::to_string(parameters);
  static const char* const units[] = {"k", "M", "B", "T"};
  double v = double(parameters);
  int unit = -1;
  // Each step divides by 1000; a value that rounds to 1000 at three digits moves up a unit too.
  while (unit < 3 && (unit < 0 || v >= 999.5)) {
    v /= 1000;
    ++unit;
  }
  const int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, units[unit]);
  return buf;
}

}  // namespace tach
