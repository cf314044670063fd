// Other processes' CPU use, from procfs: every core's busy time (/proc/stat) minus this process's
// own (all its threads, /proc/self/stat), over a window, in cores. What tells a figure measured on
// a shared machine from one measured on a quiet one.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tach/monitor.h"

namespace tach {

namespace {

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every core's busy time: /proc/stat's first line ("cpu user nice system idle iowait irq softirq
// steal guest guest_nice", in clock ticks), all but idle and iowait. guest and guest_nice are
// already inside user and nice.
bool machine_busy_s(double* out) {
  std::ifstream stat("/proc/stat");
  std::string label;
  if (!(stat >> label) || label != "cpu") return false;
  double v[8] = {};
  for (double& x : v) stat >> x;
  if (!stat) return false;
  *out = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / double(sysconf(_SC_CLK_TCK));
  return true;
}

// This process's CPU time, every thread (utime + stime of /proc/self/stat), in clock ticks as
// /proc/stat counts, so both sides of the difference move in the same steps.
bool self_busy_s(double* out) {
  ProcessSample self;
  if (!read_process_sample(getpid(), &self)) return false;
  *out = self.user_s + self.system_s;
  return true;
}

}  // namespace

CpuTimes read_cpu_times() {
  CpuTimes t;
  t.wall_s = steady_now_s();
  t.ok = machine_busy_s(&t.machine_busy_s) && self_busy_s(&t.self_s);
  return t;
}

double other_cores_between(const CpuTimes& before, const CpuTimes& after) {
  const double wall = after.wall_s - before.wall_s;
  if (!before.ok || !after.ok || wall <= 0) return 0;
  const double others = (after.machine_busy_s - before.machine_busy_s) - (after.self_s - before.self_s);
  return std::max(0.0, others / wall);
}

double load_average_1m() {
  std::ifstream in("/proc/loadavg");
  double l = -1;
  if (!(in >> l)) return -1;
  return l;
}

int online_cores() { return std::max(1, int(sysconf(_SC_NPROCESSORS_ONLN))); }

bool threads_share_cores(double other_cores, int threads, int cores) {
  return other_cores > double(cores - threads) + kContentionSlackCores;
}

CpuLoadWindow::CpuLoadWindow() : start_(read_cpu_times()), last_(start_) {}

void CpuLoadWindow::sample() {
  const double now = steady_now_s();
  if (now - last_.wall_s < kLoadSubWindowS) return;
  const CpuTimes t = read_cpu_times();
  if (!t.ok) return;
  max_ = std::max(max_, other_cores_between(last_, t));
  last_ = t;
}

double CpuLoadWindow::elapsed_s() const { return steady_now_s() - start_.wall_s; }

CpuLoad CpuLoadWindow::finish(int threads, double min_window_s) {
  // A window shorter than min_window_s is read over min_window_s: /proc/stat counts in ticks of
  // 10 ms, too coarse for a few milliseconds of work. The rest is waited out idle, reading what
  // others take while tach holds no core: their demand, which is what the point's threads met.
  // It is waited in slices of at most kLoadSubWindowS, each read, so that a load that comes and
  // goes shows in the highest, as sample() shows it for a longer point (whose runs fill the
  // window). A slice down to half a sub-window counts: a 0.5 s window then reads as two.
  CpuTimes end = read_cpu_times();
  for (double left = min_window_s - (end.wall_s - start_.wall_s); left > 0;
       left = min_window_s - (end.wall_s - start_.wall_s)) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(left, kLoadSubWindowS)));
    end = read_cpu_times();
    if (end.ok && last_.ok && end.wall_s - last_.wall_s >= kLoadSubWindowS / 2) {
      max_ = std::max(max_, other_cores_between(last_, end));
      last_ = end;
    }
  }
  CpuLoad l;
  // A /proc/stat that counts less busy time than this process alone used is not the machine's (a
  // container's synthesized view): the load is then unknown, never "0 cores". Two ticks per core
  // of slack: both files count in 10 ms ticks, sampled apart.
  const double slack_s = 0.02 * online_cores();
  l.measured =
      start_.ok && end.ok && (end.machine_busy_s - start_.machine_busy_s) + slack_s >= (end.self_s - start_.self_s);
  if (!l.measured) return l;
  l.window_s = end.wall_s - start_.wall_s;
  l.other_cores_mean = other_cores_between(start_, end);
  // The last sub-window, when long enough to mean something, and never below the mean.
  if (end.wall_s - last_.wall_s >= kLoadSubWindowS) max_ = std::max(max_, other_cores_between(last_, end));
  l.other_cores_max = std::max(max_, l.other_cores_mean);
  l.load_average_1m = load_average_1m();
  l.cores = online_cores();
  l.threads = threads;
  l.contended = threads_share_cores(l.other_cores_mean, threads, l.cores);
  return l;
}

std::string describe_cpu_load(const CpuLoad& l) {
  if (!l.measured) return "other processes' CPU use: not measured (no /proc/stat)";
  char s[240];
  std::snprintf(s, sizeof s,
                "other processes used %.2f cores (mean; %.2f at most) of %d while %d threads ran, load average %.2f",
                l.other_cores_mean, l.other_cores_max, l.cores, l.threads, l.load_average_1m);
  return s;
}

}  // namespace tach
