// Parallelism: OpenMP underneath (oneDNN in Debian uses the OpenMP runtime too, so one pool
// serves both and they never oversubscribe). Scales from 2 cores to 64.
#pragma once

#include <cstdint>
#include <string>

namespace tach::core {

int num_threads();
// n <= 0 restores the default: OMP_NUM_THREADS when set, else every core less those other
// processes kept busy when the library loaded (at least 1), so that tach's threads do not share
// cores with busy processes (parallel.cc says why).
void set_num_threads(int n);
// How the default was chosen, in words: "all 2 cores", "2 cores less 1 kept busy by other
// processes when tach started", "OMP_NUM_THREADS".
const std::string& default_threads_reason();

// Wrappers so that this header needs no <omp.h>.
int omp_thread_index();
int omp_thread_count();

// Calls fn(begin, end) over [0, n) in contiguous chunks of at least `grain` items.
template <typename Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (n <= grain || num_threads() == 1) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t chunks_wanted = (n + grain - 1) / grain;
  const int threads = static_cast<int>(chunks_wanted < num_threads() ? chunks_wanted : num_threads());
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_thread_index();
    const int nt = omp_thread_count();
    const int64_t begin = n * t / nt;
    const int64_t end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace tach::core
