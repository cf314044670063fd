#include "tach/plain_number.h"

#include <cstdio>

namespace tach {

std::string plain_number(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace tach
