// A worker process that speaks newline-delimited text over pipes: spawned in its own process group
// (so that killing it kills whatever it started: torch's compile workers, a shell), its stdout
// read line by line against a deadline with poll(), its stderr appended to a log file that the
// caller keeps (engines/<engine>.log in a run directory) and shows the tail of when it fails.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "tach/error.h"

namespace tach::engines {

// The worker did not answer in time, exited, or broke the line protocol. kind: "timeout" | "exited"
// | "io". The message names what was awaited and ends with the last lines of the worker's stderr.
class WorkerFailure : public Error {
 public:
  WorkerFailure(const std::string& kind, const std::string& message) : Error(message), kind_(kind) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

struct WorkerSpawn {
  std::vector<std::string> argv;                         // argv[0] looked up in PATH
  std::vector<std::pair<std::string, std::string>> env;  // set in the child (over the parent's)
  std::string stderr_log;                                // appended to; created with its directory
};

class WorkerProcess {
 public:
  explicit WorkerProcess(const WorkerSpawn& spawn);  // throws Error when the process cannot start
  ~WorkerProcess();                                  // kills the group when still running
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // One line to the worker's stdin (a newline is added), within timeout_s (a worker that stops
  // reading fills the pipe). A worker that closed its stdin: "exited".
  void write_line(const std::string& line, double timeout_s = 60);
  // The next line of its stdout, without the newline, within timeout_s. On a deadline, an exit or
  // a line past max_line_bytes, the group is killed and WorkerFailure thrown; `awaiting` names what
  // the line was for ("the reply to 'load'").
  std::string read_line(double timeout_s, const std::string& awaiting);
  // SIGKILL to the process group, then reaps it. Idempotent.
  void kill();
  // Waits up to timeout_s for the worker to exit by itself (after "quit"); kills it after that.
  // Returns its wait status description ("exit 0", "signal 9").
  std::string wait_exit(double timeout_s);
  bool running();
  pid_t pid() const { return pid_; }
  // The last `lines` lines of its stderr log ("" when it wrote none).
  std::string stderr_tail(int lines = 12) const;
  const std::string& stderr_log() const { return stderr_log_; }
  // How it ended, once reaped ("exit 3", "signal 9"); "" while running.
  const std::string& exit_description() const { return exit_; }
  int exit_code() const { return exit_code_; }  // -1 unless it exited normally

  static constexpr size_t max_line_bytes = size_t(1) << 30;

 private:
  [[noreturn]] void fail(const std::string& kind, const std::string& what);
  bool reap(bool block);

  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1;
  std::string buffer_, stderr_log_, exit_;
  int exit_code_ = -1;
};

}  // namespace tach::engines
