// A model's parameter count as every command prints it: three significant digits and a unit, so
// that a tiny model reads "28.7 k" (never "0.0 M") and a large one "1.24 B".
#pragma once

#include <cstdint>
#include <string>

namespace tach {

// "950", "28.7 k", "4.39 M", "110 M", "1.24 B": three significant digits (a count under 1000 in
// full), the unit the next power of 1000 when rounding reaches it (999,999 is "1.00 M").
std::string parameter_count_text(int64_t parameters);

}  // namespace tach
