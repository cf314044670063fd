#include "tach/runtime.h"

#include "core/parallel.h"

namespace tach {

void set_threads(int n) { core::set_num_threads(n); }
int threads() { return core::num_threads(); }

namespace {
std::function<void(const std::string&)>& run_dir_listener() {
  static std::function<void(const std::string&)> listener;
  return listener;
}
}  // namespace

void set_run_dir_listener(std::function<void(const std::string& dir)> listener) {
  run_dir_listener() = std::move(listener);
}

void announce_run_dir(const std::string& dir) {
  if (run_dir_listener()) run_dir_listener()(dir);
}

}  // namespace tach
