// A crash in a GPU test prints its call stack (tach/crash_report.h): the lent GPU machine has no
// debugger that stops in a stripped test binary.
#include "tach/crash_report.h"

namespace {
const bool installed = (tach::install_crash_report("test_cuda_train"), true);
}  // namespace
