// Process-wide runtime settings the CLI exposes.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace tach {

// Threads for tach's pool and oneDNN (they share one OpenMP runtime). n <= 0: the default, every
// core less those other processes kept busy when tach started (OMP_NUM_THREADS overrides).
// n above the cores runs, with threads_warning(n) on stderr (once per n).
void set_threads(int n);
int threads();
std::string default_threads_reason();  // how the default was chosen, in words
std::string threads_warning(int n);    // empty unless n exceeds the cores

// Run directories as commands create or reopen them: the CLI listens, to keep each run's
// run.log (everything the command printed) beside its results. No listener: nothing happens.
void set_run_dir_listener(std::function<void(const std::string& dir)> listener);
void announce_run_dir(const std::string& dir);

// A run directory is never written into afresh: its files would then disagree (one run's
// config.json beside another's accuracy.json, an analysis over a sweep's summary). Throws
// tach::Error "DIR already holds a run (NAME); INSTEAD" where DIR holds one of NAMES, or where
// NAMES is empty, anything at all.
void refuse_run_dir_in_use(const std::string& dir, const std::vector<std::string>& names, const std::string& instead);

// A clean stop (Ctrl-C). Work that can stop cleanly holds a StopScope while it runs: a sweep
// checks between points, training after each step (saving a checkpoint first); either then throws
// Stopped, and the run directory resumes with --resume. request_stop is async-signal-safe, so a
// SIGINT handler may call it; in_stop_scope tells the handler whether anything will look.
void request_stop();
bool stop_requested();
void clear_stop_request();
bool in_stop_scope();
class StopScope {
 public:
  StopScope();
  ~StopScope();
  StopScope(const StopScope&) = delete;
  StopScope& operator=(const StopScope&) = delete;
};

// How commands show progress on stderr. Auto resolves by stderr: a bar redrawn in place on a
// terminal, plain lines elsewhere (logs, pipes, batch jobs). The Python module sets Bar or Quiet
// from sys.stderr, since it sends std::cerr there and a notebook is no terminal.
enum class ProgressStyle { Auto, Bar, Lines, Quiet };
void set_progress_style(ProgressStyle style);
ProgressStyle progress_style();  // resolved: never Auto

}  // namespace tach
