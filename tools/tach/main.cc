// tach: measure how transformer models run. One file per subcommand (cmd_*.cc); the interface
// as a whole is run_cli (cli.cc), which the Python module calls too.
//
// Exit status, the same for every command (docs/cli.md): 0 success; 1 an error in the input or
// while running (the message says which), and a sweep in which no point ran; 2 a usage error
// (unknown option or command, a missing, malformed or out-of-range value); 3 `tach estimate`: the
// model does not fit; 4 `tach compare --fail-on-regression`: a point regressed beyond the limit; 70
// an internal error (a bug in tach); 130 a sweep or training run stopped by Ctrl-C after saving its
// work (`--resume` continues it).
#include <csignal>
#include <unistd.h>

#include "cli.h"
#include "tach/crash_report.h"
#include "run_log.h"
#include "tach/runtime.h"

namespace {

// The first Ctrl-C asks a sweep or a training run to stop cleanly: they look between points or
// after each step, save, and end with status 130. A second Ctrl-C, or one while nothing would look,
// ends the process as usual.
void on_interrupt(int) {
  if (tach::in_stop_scope() && !tach::stop_requested()) {
    tach::request_stop();
    static const char message[] = "\ntach: stopping after the current point or step (Ctrl-C again to end now)\n";
    (void)!write(STDERR_FILENO, message, sizeof message - 1);
    return;
  }
  std::signal(SIGINT, SIG_DFL);
  std::raise(SIGINT);
}

}  // namespace

int main(int argc, char** argv) {
  tach::install_crash_report("tach");
  tach::cli::RunLog run_log(argc, argv);
  tach::set_run_dir_listener([&run_log](const std::string& dir) { run_log.attach(dir); });
  std::signal(SIGINT, on_interrupt);
  return tach::cli::run_cli(std::vector<std::string>(argv, argv + argc)).status;
}
