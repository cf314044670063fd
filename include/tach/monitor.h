// What the operating system says about this process: resident memory and CPU time, from procfs.
#pragma once

#include <cstdint>

namespace tach {

struct ProcessMemory {
  int64_t rss_bytes = 0;       // VmRSS: resident now
  int64_t peak_rss_bytes = 0;  // VmHWM: the most resident since start, or since reset_peak_rss()
};

// Reads /proc/self/status. Zeros where procfs is absent (not Linux).
ProcessMemory read_process_memory();

// Resets VmHWM to the current RSS (writes "5" to /proc/self/clear_refs, Linux 4.0+), so that
// a phase can measure its own peak. False when the kernel refuses; the peak is then the
// process's peak so far, and callers must say so.
bool reset_peak_rss();

}  // namespace tach
