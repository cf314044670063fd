// A number in a message as a person writes it: 0.2, 2e-05, -1, 16 (not 0.200000, 0.000020,
// -1.000000, 16.000000, which std::to_string gives a double).
#pragma once

#include <string>

namespace tach {

// At most `digits` significant digits, trailing zeros dropped (printf's %g): plain_number(0.02) is
// "0.02", plain_number(5.6612, 3) "5.66", plain_number(1e-5) "1e-05"; nan and inf as "nan", "inf".
std::string plain_number(double v, int digits = 6);

}  // namespace tach
