// posix_spawn with its own process group, pipes for stdin and stdout, stderr straight into a log
// file (nothing in tach has to drain it, so a chatty worker never blocks on a full stderr pipe).
#include "engines/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace fs = std::filesystem;

namespace tach::engines {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_left(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

int poll_ms(double seconds) { return seconds <= 0 ? 0 : int(std::min(seconds * 1e3 + 1, 60e3)); }

std::string wait_status_text(int status, int* code) {
  if (WIFEXITED(status)) {
    *code = WEXITSTATUS(status);
    return "exit " + std::to_string(*code);
  }
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

}  // namespace

WorkerProcess::WorkerProcess(const WorkerSpawn& spawn) : stderr_log_(spawn.stderr_log) {
  check(!spawn.argv.empty(), "a worker needs a command");
  if (!stderr_log_.empty() && fs::path(stderr_log_).has_parent_path()) {
    std::error_code ec;
    fs::create_directories(fs::path(stderr_log_).parent_path(), ec);
  }
  int to_child[2], from_child[2];
  check(::pipe2(to_child, O_CLOEXEC) == 0, std::string("cannot make a pipe: ") + std::strerror(errno));
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]), ::close(to_child[1]);
    throw Error(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_log_.empty() ? "/dev/null" : stderr_log_.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: kill() reaches its children too
  // The child starts with default signal dispositions (tach may ignore some) and none blocked.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& [k, v] : spawn.env) replaced = replaced || entry.rfind(k + "=", 0) == 0;
    if (!replaced) env_text.push_back(entry);
  }
  for (const auto& [k, v] : spawn.env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spawn.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const int rc = posix_spawnp(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (rc != 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    pid_ = -1;
    throw Error("cannot start " + spawn.argv[0] + ": " + std::strerror(rc));
  }
  in_fd_ = to_child[1];
  out_fd_ = from_child[0];
  ::fcntl(in_fd_, F_SETFL, ::fcntl(in_fd_, F_GETFL) | O_NONBLOCK);
}

WorkerProcess::~WorkerProcess() {
  kill();
  if (in_fd_ >= 0) ::close(in_fd_);
  if (out_fd_ >= 0) ::close(out_fd_);
}

bool WorkerProcess::reap(bool block) {
  if (pid_ <= 0 || !exit_.empty()) return true;
  // Seen exited but not yet reaped, the group id cannot be reused: whatever the worker started in
  // its group (and left running) is killed with it.
  siginfo_t info{};
  if (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) != 0) return true;
  if (info.si_pid != pid_) return false;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, 0);
  if (r == pid_) {
    exit_ = wait_status_text(status, &exit_code_);
    return true;
  }
  return r < 0;  // not our child any more (reaped elsewhere): treat as gone
}

bool WorkerProcess::running() { return pid_ > 0 && !reap(false); }

void WorkerProcess::kill() {
  if (pid_ <= 0 || !exit_.empty()) return;
  ::kill(-pid_, SIGKILL);  // the group; then the leader, in case it left it
  ::kill(pid_, SIGKILL);
  reap(true);
}

std::string WorkerProcess::wait_exit(double timeout_s) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (!reap(false) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (exit_.empty()) kill();
  return exit_;
}

std::string WorkerProcess::stderr_tail(int lines) const {
  if (stderr_log_.empty()) return "";
  std::ifstream in(stderr_log_, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = std::max<std::streamoff>(0, size - 8192);
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  size_t pos = text.size();
  for (int n = 0; n < lines && pos != std::string::npos && pos > 0; ++n) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

void WorkerProcess::fail(const std::string& kind, const std::string& what) {
  kill();
  std::string message = what;
  if (!exit_.empty() && kind != "exited") message += " (the worker was killed)";
  const std::string tail = stderr_tail();
  if (!tail.empty()) message += "; its last stderr lines (" + stderr_log_ + "):\n" + tail;
  throw WorkerFailure(kind, message);
}

void WorkerProcess::write_line(const std::string& line, double timeout_s) {
  const std::string text = line + "\n";
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  size_t done = 0;
  // A worker that has gone makes write() raise SIGPIPE: blocked here, and the pending one taken.
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool broken = false;
  while (done < text.size()) {
    const ssize_t n = ::write(in_fd_, text.data() + done, text.size() - done);
    if (n > 0) {
      done += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      const double left = seconds_left(deadline);
      if (left <= 0) break;
      pollfd p{in_fd_, POLLOUT, 0};
      (void)::poll(&p, 1, poll_ms(left));
      continue;
    }
    broken = true;
    break;
  }
  if (broken) {
    const timespec zero{0, 0};
    (void)sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (broken) {
    reap(false);
    fail("exited", "the worker stopped reading its requests" + (exit_.empty() ? std::string() : " (" + exit_ + ")"));
  }
  if (done < text.size())
    fail("timeout", "the worker did not read a request within " + std::to_string(int(timeout_s)) + " s");
}

std::string WorkerProcess::read_line(double timeout_s, const std::string& awaiting) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  char chunk[65536];
  for (;;) {
    if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    if (buffer_.size() > max_line_bytes)
      fail("io", "the worker wrote a line of over 1 GiB while tach awaited " + awaiting);
    const double left = seconds_left(deadline);
    if (left <= 0) {
      std::ostringstream s;
      s << "the worker gave no " << awaiting << " within " << timeout_s << " s";
      fail("timeout", s.str());
    }
    pollfd p{out_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, poll_ms(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(out_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // end of its stdout: it exited (or closed it)
      (void)wait_exit(2.0);
      fail("exited", "the worker exited (" + (exit_.empty() ? std::string("closed its stdout") : exit_) +
                         ") while tach awaited " + awaiting);
    }
    buffer_.append(chunk, size_t(n));
  }
}

}  // namespace tach::engines
