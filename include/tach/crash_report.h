// What a crash leaves behind: a fatal signal (a segmentation fault, an abort) prints which signal
// and the call stack before the process ends as it would have, so a crash on a machine one cannot
// debug on (a lent GPU machine, a cluster node) still says where it happened. The frames of a
// stripped binary read `tach(+0x1a2b3c)`: `addr2line -f -C -e tach 0x1a2b3c` on the unstripped
// binary of the same build names the function.
#pragma once

namespace tach {

// Installs the report for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (once; later calls do
// nothing). `program` names the process in the report ("tach").
void install_crash_report(const char* program);

}  // namespace tach
