#include "core/parallel.h"

#include <dirent.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace tach::core {

namespace {

// Runnable tasks of the whole machine now: /proc/loadavg's fourth field, "R/T" (R runnable now,
// the reading thread among them). -1 where absent.
int runnable_now() {
  std::ifstream in("/proc/loadavg");
  std::string l1, l5, l15, rt;
  if (!(in >> l1 >> l5 >> l15 >> rt)) return -1;
  return std::atoi(rt.c_str());
}

// This process's threads that are runnable now (state R in /proc/self/task/*/stat).
int own_runnable_threads() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return 1;
  int n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream stat(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++n;
  }
  closedir(dir);
  return std::max(n, 1);
}

struct DefaultThreads {
  int threads = 1;
  std::string reason;
};

// The default thread count: every core, less those other processes keep busy when tach starts.
// OpenMP threads that share a core with another process's busy thread wait for each other at
// every parallel region's barrier (libgomp spins, then sleeps a scheduler slice), and a forward
// that passes hundreds of barriers runs 10 to 300 times slower (docs/perf.md, "On a shared
// machine"). Other processes' runnable tasks are read three times, a millisecond apart, and the
// fewest counted, so a task that merely wakes for a moment does not take a core away.
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
    const int r = runnable_now();
    if (r < 0) {
      others = 0;
      break;
    }
    others = std::min(others, std::max(0, r - own_runnable_threads()));
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
