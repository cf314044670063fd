// Formatting numbers for people: units always printed.
#pragma once

#include <string>

#include "tach/stats.h"

namespace tach::cli {

std::string human_bytes(double bytes);      // "255.3 MiB"
std::string fixed(double v, int decimals);  // "12.35"
// A probability as the pipelines' scores run: `digits` significant digits, so that a small one
// still shows its order ("3.142e-05", not "0.0000").
std::string significant(double v, int digits = 4);  // "0.1235", "3.142e-05"
// "median 12.35 ms (min 12.01, p90 12.90, max 13.40; IQR 0.21 ms = 1.7%)"
std::string describe_ms(const Summary& s_seconds);

}  // namespace tach::cli
