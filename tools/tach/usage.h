// What a usage error says, the same for every command: checks on option values that CLI11 runs
// while parsing (so a bad value is a usage error, exit status 2, before anything runs), and the
// nearest command or option for a misspelled one ("did you mean --batch?").
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tach::cli {

// A count that must be 1 or more: "batch size 0: batch sizes must be positive integers".
// what: "batch size"; plural: "batch sizes".
CLI::Validator positive_count(const std::string& what, const std::string& plural);
// A count that may be 0: "--warmup -1: must be 0 or more (an integer)".
CLI::Validator non_negative_count(const std::string& option);
// One of `choices`: "--mode foo: not one of inference, train-full, ...".
CLI::Validator one_of(const std::string& option, const std::vector<std::string>& choices);
// One of `choices`, in any case: "--tag-scheme iob9: not one of conlleval, IOB1, ...".
CLI::Validator one_of_any_case(const std::string& option, const std::vector<std::string>& choices);
// A compute dtype as parse_compute_dtype reads it (f32, bf16, f16, int8, nf4).
CLI::Validator compute_dtype_name(const std::string& option);

// A compute dtype the device does not take (f16 on the CPU): a usage error before the model loads,
// as docs/cli.md's exit-status rule says a value the device does not take is. dtype_flag names the
// option (--dtype); device: as given (cpu, cuda, cuda:N).
void check_dtype_on_device(const std::string& dtype, const std::string& device,
                           const std::string& dtype_flag = "--dtype");
// A fraction in [0, 1): "--margin 1.5: must be in [0, 1)".
CLI::Validator fraction_below_one(const std::string& option);
// Threads: 0 (all cores) or more.
CLI::Validator thread_count();
// A device as parse_device reads it (cpu, cuda, cuda:N), and "auto" where allow_auto.
CLI::Validator device_name(bool allow_auto);

// The batch option's names, the same in every command: -b and --batch, with --batch-size and
// --batch-sizes kept as aliases.
inline constexpr const char* kBatchOption = "-b,--batch,--batch-size,--batch-sizes";

// The candidate nearest to `word` by edit distance (a swap of two neighbours counts once), or ""
// when none is close enough to be a plausible misspelling.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// For `tach ARGS...` (args[0] is the program): a line per misspelling found, "did you mean ...?",
// for an unknown command or an unknown --option of the command given. Empty when it finds none.
std::string usage_suggestions(const CLI::App& app, const std::vector<std::string>& args);

// After a parse that left arguments no option takes: "tach COMMAND does not take: A B (...)",
// the arguments in the order given (CLI11's own message lists them last first).
std::string unexpected_arguments(const CLI::App& app, const std::vector<std::string>& args);

// args[1] when it is an option tach itself does not take (--bogus, not --help or --version):
// "tach has no option --bogus; ..." with the nearest option or command, else "".
std::string unknown_top_option(const CLI::App& app, const std::vector<std::string>& args);

// args[1] when it names no command of app and is not an option: the unknown command, else "".
std::string unknown_command(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace tach::cli
