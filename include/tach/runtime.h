// Process-wide runtime settings the CLI exposes.
#pragma once

#include <functional>
#include <string>

namespace tach {

// Threads for tach's pool and oneDNN (they share one OpenMP runtime). n <= 0: the default.
void set_threads(int n);
int threads();

// Run directories as commands create or reopen them: the CLI listens, to keep each run's
// run.log (everything the command printed) beside its results. No listener: nothing happens.
void set_run_dir_listener(std::function<void(const std::string& dir)> listener);
void announce_run_dir(const std::string& dir);

}  // namespace tach
