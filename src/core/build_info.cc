// tach's version and the git commit CMake saw when it configured the build.
#include <string>

#include "tach/system_info.h"

namespace tach {

std::string tach_version() {
  return std::string(TACH_VERSION_STRING) + " (commit " + TACH_GIT_COMMIT + " at configure time)";
}

}  // namespace tach
