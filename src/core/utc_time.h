// The current UTC time as ISO 8601 text ("2026-11-25T03:29:36Z"), the form every timestamp tach
// writes takes (results, ceilings, reports).
#pragma once

#include <string>

namespace tach::core {

std::string utc_now_iso();

}  // namespace tach::core
