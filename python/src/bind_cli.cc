// The command line interface in process: tach.bench(...), tach.train(...) and the others build
// the argument list the CLI would get and run it here, through the same run_cli as the tach
// executable, so they take the same options, write the same run directories and fail with the
// same messages. The GIL is released while a command runs; its output goes to Python's
// sys.stdout/sys.stderr (a notebook shows it), or stdout is captured: for commands whose JSON the
// Python side reads, and where sys.stdout is no terminal (the run commands stay quiet there; the
// caller decides, python/tach/_commands.py). run.log is kept as the executable keeps it, captured
// lines included. Progress draws only where sys.stderr is a terminal.
#include <pybind11/iostream.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <iostream>
#include <mutex>
#include <sstream>
#include <unistd.h>

#include "bindings.h"
#include "cli.h"
#include "run_log.h"
#include "tach/error.h"
#include "tach/runtime.h"

namespace py = pybind11;

namespace tach::python {

namespace {

std::mutex g_one_command;  // the run-directory listener and the SIGINT handler are process-wide

// While a command runs: the first Ctrl-C asks a sweep or training run to stop cleanly (it saves
// and raises KeyboardInterrupt, and the run resumes); during a command that cannot stop midway
// it says so; a second Ctrl-C ends the process, as it would end the executable.
void on_interrupt(int) {
  if (!stop_requested()) {
    request_stop();
    static const char stopping[] = "\ntach: stopping after the current point or step (Ctrl-C again to end now)\n";
    static const char cannot[] =
        "\ntach: this command cannot stop midway; it ends when done (Ctrl-C again to end now)\n";
    if (in_stop_scope()) (void)!write(STDERR_FILENO, stopping, sizeof stopping - 1);
    else (void)!write(STDERR_FILENO, cannot, sizeof cannot - 1);
    return;
  }
  std::signal(SIGINT, SIG_DFL);
  std::raise(SIGINT);
}

// Progress follows Python's sys.stderr, where std::cerr goes: the bar where it is a terminal;
// nothing where it is not (a notebook, a file, a pipe), as the returned Run holds the results.
// Notes and failed points print either way.
ProgressStyle progress_for_python_stderr() {
  try {
    return py::module_::import("sys").attr("stderr").attr("isatty")().cast<bool>() ? ProgressStyle::Bar
                                                                                   : ProgressStyle::Quiet;
  } catch (const py::error_already_set&) {
    return ProgressStyle::Quiet;  // sys.stderr is None or has no isatty()
  }
}

// Options of a command for the Python side: long names, and whether each is a flag (no value).
py::list command_options(const std::string& command) {
  py::list out;
  for (const auto& o : cli::command_options(command)) {
    py::dict d;
    d["names"] = o.long_names, d["flag"] = o.flag, d["multiple"] = o.multiple, d["positional"] = o.positional;
    d["delimiter"] = o.delimiter;
    d["description"] = o.description;
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_cli(py::module_& m) {
  m.def(
      "run_cli",
      [](const std::vector<std::string>& args, bool capture_stdout) {
        std::lock_guard<std::mutex> one(g_one_command);
        std::ostringstream captured;
        std::streambuf* const cout_before = std::cout.rdbuf();
        std::unique_ptr<py::scoped_ostream_redirect> to_python_out;
        if (capture_stdout) std::cout.rdbuf(captured.rdbuf());
        else to_python_out = std::make_unique<py::scoped_ostream_redirect>(std::cout);
        py::scoped_estream_redirect to_python_err(std::cerr);
        std::vector<std::string> run_dirs;
        cli::CliOutcome outcome;
        bool interrupted = false;
        {
          std::vector<std::string> argv_text = args;
          argv_text.insert(argv_text.begin(), "tach");
          std::vector<char*> argv;
          for (auto& a : argv_text) argv.push_back(a.data());
          cli::RunLog run_log(int(argv.size()), argv.data());
          set_run_dir_listener([&](const std::string& dir) {
            run_log.attach(dir);
            run_dirs.push_back(dir);
          });
          clear_stop_request();
          set_progress_style(progress_for_python_stderr());
          struct sigaction ours {
          }, before{};
          ours.sa_handler = on_interrupt;
          sigemptyset(&ours.sa_mask);
          sigaction(SIGINT, &ours, &before);
          {
            py::gil_scoped_release unlocked;
            outcome = cli::run_cli(argv_text, false);
          }
          sigaction(SIGINT, &before, nullptr);
          interrupted = stop_requested();
          clear_stop_request();
          set_progress_style(ProgressStyle::Auto);
          set_run_dir_listener(nullptr);
        }
        std::cout.flush();
        std::cerr.flush();
        to_python_out.reset();
        std::cout.rdbuf(cout_before);
        if (interrupted && outcome.status == 0) {
          PyErr_SetString(PyExc_KeyboardInterrupt, "tach: the command finished before it could stop");
          throw py::error_already_set();
        }
        return py::make_tuple(outcome.status, outcome.error, captured.str(), run_dirs);
      },
      py::arg("args"), py::arg("capture_stdout") = false,
      "Runs `tach ARGS...` in this process: (exit status, error message, captured stdout, run directories).");
  m.def("command_help", &cli::command_help, py::arg("command") = "", "The --help text of `tach COMMAND`.");
  m.def("command_names", &cli::command_names, "Every subcommand, in --help's order.");
  m.def("command_options", &command_options, py::arg("command"),
        "The options of `tach COMMAND`: names, flag or value, description (from the same text as --help).");
}

}  // namespace tach::python
