// Process memory from /proc/self/status (kB values, converted to bytes here, in one place), and a
// started command's peak.
#include <fstream>
#include <string>

#include "tach/monitor.h"

namespace tach {

ProcessMemory read_process_memory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    const auto kb = [&](const char* key) {
      return line.rfind(key, 0) == 0 ? std::stoll(line.substr(std::string(key).size())) * 1024 : -1;
    };
    if (int64_t v = kb("VmRSS:"); v >= 0) m.rss_bytes = v;
    if (int64_t v = kb("VmHWM:"); v >= 0) m.peak_rss_bytes = v;
  }
  return m;
}

CommandPeak command_peak_rss(int64_t pre_exec_peak_bytes, int64_t ru_maxrss_bytes, int64_t sampled_peak_bytes) {
  // exec runs in the pre-exec copy and may touch a few of its pages after its peak was read.
  constexpr int64_t kExecSlackBytes = 1 << 20;
  CommandPeak p;
  if (ru_maxrss_bytes > pre_exec_peak_bytes + kExecSlackBytes) {
    p.bytes = ru_maxrss_bytes;
    p.exact = true;
    p.method = "the kernel's peak for the command, wait4's ru_maxrss, above tach's pre-exec copy";
  } else if (sampled_peak_bytes > 0) {
    p.bytes = sampled_peak_bytes;
    p.method = "VmHWM sampled after exec; growth after the last sample is not seen";
  } else {
    p.method = "not measured: the command exited before a sample after its start; a shorter --interval samples sooner";
  }
  return p;
}

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace tach
