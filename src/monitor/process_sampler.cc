// Process samples from procfs, RAPL energy, and the background sampler.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "tach/monitor.h"

namespace tach {

bool read_process_sample(pid_t pid, ProcessSample* out) {
  const std::string base = "/proc/" + std::to_string(pid);
  std::ifstream stat(base + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // Fields after the command (which may hold spaces): from the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream f(line.substr(close + 2));
  std::vector<std::string> v;
  std::string tok;
  while (f >> tok) v.push_back(tok);
  if (v.size() < 20) return false;
  out->alive = v[0] != "Z" && v[0] != "X";  // state: zombie or dead
  const double tick = double(sysconf(_SC_CLK_TCK));
  out->user_s = std::stod(v[11]) / tick;    // utime (field 14)
  out->system_s = std::stod(v[12]) / tick;  // stime (field 15)
  out->threads = std::stoi(v[17]);          // num_threads (field 20)
  std::ifstream status(base + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) out->rss_bytes = std::stoll(line.substr(6)) * 1024;
    if (line.rfind("VmHWM:", 0) == 0) out->peak_rss_bytes = std::stoll(line.substr(6)) * 1024;
  }
  return true;
}

namespace {
bool read_u64(const std::string& path, uint64_t* v) {
  std::ifstream in(path);
  return static_cast<bool>(in >> *v);
}
std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}
}  // namespace

RaplEnergy::RaplEnergy() {
  const std::string root = "/sys/class/powercap";
  DIR* dir = opendir(root.c_str());
  if (!dir) {
    reason_ = root + " is absent (no powercap driver: typical of VMs and containers)";
    return;
  }
  bool any = false;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind("intel-rapl:", 0) != 0) continue;
    any = true;
    Domain d;
    d.path = root + "/" + name;
    d.name = read_line(d.path + "/name");
    // Package domains hold their core and uncore subdomains: count packages and DRAM only.
    const bool sub = std::count(name.begin(), name.end(), ':') > 1;
    if (sub && d.name != "dram") continue;
    if (!read_u64(d.path + "/energy_uj", &d.last_uj)) {
      reason_ = d.path + "/energy_uj is not readable (needs root on kernels since 5.10)";
      continue;
    }
    read_u64(d.path + "/max_energy_range_uj", &d.max_uj);
    domains_.push_back(d);
  }
  closedir(dir);
  if (!any) reason_ = root + " has no intel-rapl domains (no RAPL on this CPU, or a VM that hides it)";
  if (!domains_.empty()) reason_.clear();
}

std::vector<std::string> RaplEnergy::domains() const {
  std::vector<std::string> out;
  for (const auto& d : domains_) out.push_back(d.name);
  return out;
}

double RaplEnergy::joules() {
  double total = 0;
  for (auto& d : domains_) {
    uint64_t now = 0;
    if (read_u64(d.path + "/energy_uj", &now)) {
      // The counter wraps at max_energy_range_uj.
      const uint64_t delta = now >= d.last_uj ? now - d.last_uj : now + (d.max_uj - d.last_uj);
      d.total_j += double(delta) * 1e-6;
      d.last_uj = now;
    }
    total += d.total_j;
  }
  return total;
}

ProcessSampler::ProcessSampler(pid_t pid, double interval_s) : pid_(pid), interval_s_(interval_s) {}

ProcessSampler::~ProcessSampler() { stop(); }

void ProcessSampler::start() {
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void ProcessSampler::stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

void ProcessSampler::loop() {
  const auto t0 = std::chrono::steady_clock::now();
  ProcessSample prev;
  bool have_prev = false;
  while (running_) {
    const auto s0 = std::chrono::steady_clock::now();
    MonitorSample m;
    m.process.t_s = std::chrono::duration<double>(s0 - t0).count();
    if (!read_process_sample(pid_, &m.process)) m.process.alive = false;
    if (have_prev && m.process.t_s > prev.t_s)
      m.process.cpu_percent = 100.0 * ((m.process.user_s + m.process.system_s) - (prev.user_s + prev.system_s)) /
                              (m.process.t_s - prev.t_s);
    if (gpu_.available()) m.gpus = gpu_.sample();
    if (rapl_.available()) m.cpu_energy_j = rapl_.joules();
    prev = m.process;
    have_prev = true;
    const double cost = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      samples_.push_back(m);
      cost_s_.push_back(cost);
    }
    if (!m.process.alive) break;
    // Sleep in short slices so that stop() returns promptly.
    const auto next = s0 + std::chrono::duration<double>(interval_s_);
    while (running_ && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<MonitorSample> ProcessSampler::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

double ProcessSampler::sampling_cost_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (cost_s_.empty()) return 0;
  std::vector<double> v = cost_s_;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace tach
