#include "core/parallel.h"

#include <dirent.h>
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace tach::core {

namespace {

// A task's state and nice value from its /proc/.../stat line ("pid (comm) S ... nice ...": the
// state is the first field after the command, nice the 17th).
bool runnable_at_or_above(const std::string& path, long my_nice) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'R') return false;
  std::istringstream fields(line.substr(close + 2));
  std::string f;
  int read = 0;
  while (read < 17 && fields >> f) ++read;
  return read == 17 && std::atol(f.c_str()) <= my_nice;
}

// Other processes' threads that are runnable now at this process's priority or above (a niced
// background job yields its core to tach, so it does not count): every /proc/PID/task/TID/stat.
// -1 where /proc cannot be read.
int others_runnable_now() {
  DIR* procs = opendir("/proc");
  if (!procs) return -1;
  const long my_nice = getpriority(PRIO_PROCESS, 0);
  const std::string self = std::to_string(getpid());
  int n = 0;
  while (dirent* p = readdir(procs)) {
    if (p->d_name[0] < '0' || p->d_name[0] > '9' || self == p->d_name) continue;
    const std::string tasks = std::string("/proc/") + p->d_name + "/task";
    DIR* dir = opendir(tasks.c_str());
    if (!dir) continue;  // gone meanwhile
    while (dirent* t = readdir(dir))
      if (t->d_name[0] != '.' && runnable_at_or_above(tasks + "/" + t->d_name + "/stat", my_nice)) ++n;
    closedir(dir);
  }
  closedir(procs);
  return n;
}

struct DefaultThreads {
  int threads = 1;
  std::string reason;
};

// The default thread count: every core, less those other processes keep busy when tach starts.
// OpenMP threads that share a core with another process's busy thread wait for each other at
// every parallel region's barrier (libgomp spins, then sleeps a scheduler slice), and a forward
// that passes hundreds of barriers runs 10 to 300 times slower (docs/perf.md, "On a shared
// machine"). Other processes' runnable threads (at tach's priority or above: a niced job yields)
// are counted three times, a millisecond apart, and the fewest kept, so a task that merely wakes
// for a moment does not take a core away.
// OMP_NUM_THREADS, when set, is the default as given.
DefaultThreads choose_default_threads() {
  DefaultThreads d;
  const int cores = std::max(1, omp_get_num_procs());
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && *env) {
    d.threads = omp_get_max_threads();
    d.reason = "OMP_NUM_THREADS";
    return d;
  }
  int others = cores;
  for (int i = 0; i < 3; ++i) {
    if (i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int r = others_runnable_now();
    if (r < 0) {
      others = 0;
      break;
    }
    others = std::min(others, r);
  }
  d.threads = std::clamp(cores - others, 1, cores);
  if (others == 0) {
    d.reason = "all " + std::to_string(cores) + " cores";
  } else {
    d.reason = std::to_string(cores) + " cores less " + std::to_string(std::min(others, cores)) +
               " kept busy by other processes when tach started";
  }
  omp_set_num_threads(d.threads);
  return d;
}

const DefaultThreads& default_threads() {
  static const DefaultThreads d = choose_default_threads();
  return d;
}

// Chosen when the library loads, before any OpenMP region (oneDNN's included) starts a thread.
[[maybe_unused]] const DefaultThreads& g_chosen_at_load = default_threads();

}  // namespace

int num_threads() { return omp_get_max_threads(); }

void set_num_threads(int n) { omp_set_num_threads(n > 0 ? n : default_threads().threads); }

const std::string& default_threads_reason() { return default_threads().reason; }

int omp_thread_index() { return omp_get_thread_num(); }
int omp_thread_count() { return omp_get_num_threads(); }

}  // namespace tach::core
