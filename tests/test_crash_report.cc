// A fatal signal prints which signal and the call stack, then ends the process as the signal would
// (tach/crash_report.h).
#include <gtest/gtest.h>

#include <csignal>

#include "tach/crash_report.h"

namespace tach {
namespace {

TEST(CrashReportDeathTest, ASegmentationFaultNamesItselfAndPrintsTheStack) {
  EXPECT_EXIT(
      {
        install_crash_report("tach");
        std::raise(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV), "tach: internal error: Segmentation fault \\(a bug in tach[^\n]*\n.*\\(\\+0x");
}

TEST(CrashReportDeathTest, AnAbortIsReportedAndStillAborts) {
  EXPECT_EXIT(
      {
        install_crash_report("test");
        std::abort();
      },
      testing::KilledBySignal(SIGABRT), "test: internal error: Aborted");
}

}  // namespace
}  // namespace tach
