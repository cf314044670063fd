// Process memory from /proc/self/status (kB values, converted to bytes here, in one place).
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

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace tach
