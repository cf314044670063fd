#include "core/parallel.h"

#include <omp.h>

#include <thread>

namespace tach::core {

namespace {
int& default_threads() {
  static int n = omp_get_max_threads();
  return n;
}
}  // namespace

int num_threads() { return omp_get_max_threads(); }

void set_num_threads(int n) { omp_set_num_threads(n > 0 ? n : default_threads()); }

int omp_thread_index() { return omp_get_thread_num(); }
int omp_thread_count() { return omp_get_num_threads(); }

}  // namespace tach::core
