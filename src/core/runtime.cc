#include "tach/runtime.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>

#include "core/parallel.h"
#include "tach/error.h"

namespace tach {

void set_threads(int n) {
  core::set_num_threads(n);
  // More threads than cores share them, and wait on each other at every barrier: said once per
  // count, on stderr (where every command's warnings go; the Python module forwards it).
  const std::string w = threads_warning(n);
  static std::set<int> warned;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (!w.empty() && warned.insert(n).second) std::cerr << "warning: " << w << "\n";
}
int threads() { return core::num_threads(); }
std::string default_threads_reason() { return core::default_threads_reason(); }

std::string threads_warning(int n) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0 || cores <= 0 || n <= cores) return "";
  return std::to_string(n) + " threads on " + std::to_string(cores) +
         " cores: threads share cores and wait on each other at every parallel step, so timings are slower and "
         "noisier than with " +
         std::to_string(cores) + " or fewer";
}

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

void refuse_run_dir_in_use(const std::string& dir, const std::vector<std::string>& names, const std::string& instead) {
  std::error_code ec;
  std::string held;
  if (names.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      held = entry.path().filename().string();
      break;
    }
  } else {
    for (const auto& name : names)
      if (std::filesystem::exists(std::filesystem::path(dir) / name, ec)) {
        held = name;
        break;
      }
  }
  check(held.empty(), dir + " already holds a run (" + held + "); " + instead);
}

namespace {
// Lock-free atomics: safe to touch from a signal handler.
std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_scopes{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);
}  // namespace

void request_stop() { g_stop_requested.store(true); }
bool stop_requested() { return g_stop_requested.load(); }
void clear_stop_request() { g_stop_requested.store(false); }
bool in_stop_scope() { return g_stop_scopes.load() > 0; }
StopScope::StopScope() { g_stop_scopes.fetch_add(1); }
StopScope::~StopScope() { g_stop_scopes.fetch_sub(1); }

namespace {
std::atomic<ProgressStyle> g_progress_style{ProgressStyle::Auto};
}  // namespace

void set_progress_style(ProgressStyle style) { g_progress_style.store(style); }
ProgressStyle progress_style() {
  const ProgressStyle s = g_progress_style.load();
  if (s != ProgressStyle::Auto) return s;
  return ::isatty(STDERR_FILENO) ? ProgressStyle::Bar : ProgressStyle::Lines;
}

}  // namespace tach
