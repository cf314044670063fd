#include "tach/crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace tach {

namespace {

const char* g_program = "tach";

void write_text(const char* text) { (void)!write(STDERR_FILENO, text, strlen(text)); }

// Only async-signal-safe calls: write, backtrace (its library was loaded at install), and
// backtrace_symbols_fd (writes without allocating).
void on_fatal_signal(int sig) {
  write_text("\n");
  write_text(g_program);
  write_text(": internal error: ");
  write_text(strsignal(sig));
  write_text(" (a bug in tach: please report it with this call stack)\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  // SA_RESETHAND restored the default action: the signal ends the process with its usual status.
  raise(sig);
}

}  // namespace

void install_crash_report(const char* program) {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  g_program = program;
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
  // Its own stack, so a stack overflow is reported too.
  static char alternate_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace tach
