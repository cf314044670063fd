// The command line interface as a function: what `tach ARGS...` does, without the process around
// it. main() calls it, and so does the Python module (python/), so both parse and run alike.
#pragma once

#include <string>
#include <vector>

namespace tach::cli {

struct CliOutcome {
  // The exit status, as main.cc lists them; 130 when a sweep or training run stopped on Ctrl-C.
  int status = 0;
  std::string error;  // the message of a failure (status 1, 70 or 130), as printed after "tach: error: "
};

// args[0] is the program name. With print_errors, failures are printed to std::cerr as the
// command line prints them; usage errors and --help always are (CLI11 prints them).
CliOutcome run_cli(const std::vector<std::string>& args, bool print_errors = true);

// The --help text of `tach COMMAND` ("" for the program's own), word for word.
std::string command_help(const std::string& command);

// Every subcommand's name, in the order --help lists them.
std::vector<std::string> command_names();

// An option of a subcommand, as the Python module maps keyword arguments onto them.
struct OptionInfo {
  std::vector<std::string> long_names;  // without the dashes: "batch-sizes"; a positional's name
  bool flag = false;                    // takes no value
  bool multiple = false;                // takes several values (comma-separated, or repeated)
  bool positional = false;
  std::string delimiter;  // what separates several values in one argument ("," or "": repeat the option)
  std::string description;
};
std::vector<OptionInfo> command_options(const std::string& command);

}  // namespace tach::cli
