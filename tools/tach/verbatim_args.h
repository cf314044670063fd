// Texts on the command line arrive byte for byte.
//
// CLI11 (2.1) reads a value that starts with '[' and ends with ']' as a list and splits it at
// commas, for every option that takes several values, positionals included, and has no switch
// to turn that off. A text such as "[CLS] hello [SEP]" or "[a,b]" would be mangled. So before
// parsing, every such argument is swapped for an opaque placeholder, and a transform on every
// option puts the original bytes back before the value is converted. Nothing else in CLI11
// rewrites values (no trimming, no unquoting), so with this every text is what the user gave.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tach::cli {

class VerbatimArgs {
 public:
  // Copies argv; arguments that CLI11 would split are replaced by placeholders.
  VerbatimArgs(int argc, const char* const* argv);

  // Adds the restoring transform to every option of `app` and of its subcommands, recursively.
  // Call after every option is registered and before parse().
  void restore_in(CLI::App& app) const;

  // What to hand to CLI::App::parse: the arguments after the program name, in CLI11's
  // reversed order.
  std::vector<std::string> for_parse() const;

  // The original bytes of a placeholder, or `value` unchanged when it is not one.
  std::string restore(const std::string& value) const;

 private:
  std::vector<std::string> args_;       // argv[1..], placeholders in place of bracketed values
  std::vector<std::string> originals_;  // originals_[k]: the bytes placeholder k stands for
  std::string tag_;                     // placeholder prefix, unique to this process
};

}  // namespace tach::cli
