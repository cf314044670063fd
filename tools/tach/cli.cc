#include "cli.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "commands.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "usage.h"
#include "verbatim_args.h"

namespace tach::cli {

namespace {

constexpr int kUsageError = 2;
constexpr int kInternalError = 70;  // EX_SOFTWARE in sysexits.h
constexpr int kStopped = 130;       // 128 + SIGINT, as a shell reports a command Ctrl-C ended

// The program with every subcommand registered; `commands` receives how to run each.
std::unique_ptr<CLI::App> make_app(std::vector<Command>& commands) {
  auto app = std::make_unique<CLI::App>(
      "tach: measure how transformer models run (latency, throughput, memory, accuracy, profiles)", "tach");
  app->set_version_flag("--version", std::string("tach 0.1.0"));
  app->require_subcommand(1);
  const std::string exit_status =
      "Exit status: 0 success, 1 error (and a sweep in which no point ran), 2 usage error (an unknown option or\n"
      "command, a malformed or out-of-range value), 3 (estimate) does not fit, 4 (compare) regressed beyond\n"
      "--fail-on-regression, 70 internal error, 130 a sweep or training run stopped by Ctrl-C (it resumes).";
  app->footer(exit_status);
  commands = {
      add_info_command(*app),     add_classify_command(*app), add_fill_mask_command(*app), add_answer_command(*app),
      add_embed_command(*app),    add_tokenize_command(*app), add_bench_command(*app),     add_eval_command(*app),
      add_run_command(*app),      add_generate_command(*app), add_profile_command(*app),   add_monitor_command(*app),
      add_estimate_command(*app), add_train_command(*app),    add_merge_command(*app),     add_download_command(*app),
      add_dataset_command(*app),  add_compare_command(*app),  add_report_command(*app),    add_manifest_command(*app),
      add_verify_command(*app),   add_analyze_command(*app),  add_prune_command(*app),     add_shrink_command(*app),
  };
  // Which commands take -b/--batch, read from the commands themselves so the line stays true; every
  // command given the exit-status footer gets it too.
  std::string batching;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_option_no_throw("--batch") != nullptr) batching += (batching.empty() ? "" : ", ") + sub->get_name();
  const std::string batch_line = "The batch size is -b/--batch (also --batch-size, --batch-sizes) in " + batching +
                                 "; eval's is --eval-batch-size.";
  const std::string footer = exit_status + "\n" + batch_line;
  app->footer(footer);
  // A command with a footer of its own that takes -b/--batch (shrink) gets the line after it.
  for (CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_footer() == exit_status) sub->footer(footer);
    else if (sub->get_option_no_throw("--batch") != nullptr) sub->footer(sub->get_footer() + "\n\n" + batch_line);
  }
  return app;
}

}  // namespace

CliOutcome run_cli(const std::vector<std::string>& args, bool print_errors) {
  std::vector<Command> commands;
  const auto app = make_app(commands);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const VerbatimArgs verbatim(int(argv.size()), argv.data());
  verbatim.restore_in(*app);
  CliOutcome out;
  // A misspelt command is named, with the nearest one, rather than CLI11's "A subcommand is
  // required"; a misspelt option gets the nearest of its command's after CLI11's message.
  const std::string top_option = unknown_top_option(*app, args);
  if (const std::string word = unknown_command(*app, args); !word.empty() || !top_option.empty()) {
    out.status = kUsageError;
    out.error = !top_option.empty() ? top_option : usage_suggestions(*app, args);
    std::cerr << "tach: " << out.error;
    out.error.pop_back();  // the newline
    return out;
  }
  try {
    app->parse(verbatim.for_parse());
  } catch (const CLI::ExtrasError&) {
    // Arguments no option takes: the nearest option's name where one was misspelt, else the
    // arguments in the order given (CLI11 lists them last first).
    out.status = kUsageError;
    std::string hints = usage_suggestions(*app, args);
    if (hints.empty()) hints = unexpected_arguments(*app, args) + "\n";
    std::cerr << hints;  // each line opens with "tach COMMAND"
    out.error = hints.substr(0, hints.size() - 1);
    return out;
  } catch (const CLI::ParseError& e) {
    const int code = app->exit(e);  // prints help, the version, or the message
    out.status = code == 0 ? 0 : kUsageError;
    if (code != 0) {
      const std::string hints = usage_suggestions(*app, args);
      std::cerr << hints;
      out.error = e.what() + std::string(hints.empty() ? "" : "\n" + hints.substr(0, hints.size() - 1));
    }
    return out;
  }
  auto fail = [&](int status, const std::string& kind, const std::string& message) {
    out.status = status;
    out.error = message;
    if (print_errors) std::cerr << "tach: " << kind << ": " << message << "\n";
  };
  try {
    for (const auto& c : commands)
      if (c.app->parsed()) {
        out.status = c.run();
        return out;
      }
  } catch (const Stopped& e) { fail(kStopped, "stopped", e.what()); } catch (const UsageError& e) {
    fail(kUsageError, "usage error", e.what());
  } catch (const Error& e) { fail(1, "error", e.what()); } catch (const std::exception& e) {
    fail(kInternalError, "internal error", e.what());
  }
  clear_stop_request();
  return out;
}

std::string command_help(const std::string& command) {
  std::vector<Command> commands;
  const auto app = make_app(commands);
  if (command.empty()) return app->help();
  for (const auto& c : commands)
    if (c.app->get_name() == command) return c.app->help(app->get_name());
  throw Error("no command '" + command + "'");
}

std::vector<OptionInfo> command_options(const std::string& command) {
  std::vector<Command> commands;
  const auto app = make_app(commands);
  for (const auto& c : commands) {
    if (c.app->get_name() != command) continue;
    std::vector<OptionInfo> out;
    for (const CLI::Option* o : c.app->get_options()) {
      OptionInfo i;
      i.positional = !o->nonpositional();
      i.long_names = i.positional ? std::vector<std::string>{o->get_name(true, false)} : o->get_lnames();
      if (i.long_names.empty() || i.long_names[0] == "help") continue;
      i.flag = o->get_expected_max() == 0;
      i.multiple = o->get_items_expected_max() > 1;
      if (o->get_delimiter() != '\0') i.delimiter = std::string(1, o->get_delimiter());
      i.description = o->get_description();
      out.push_back(std::move(i));
    }
    return out;
  }
  throw Error("no command '" + command + "'");
}

std::vector<std::string> command_names() {
  std::vector<Command> commands;
  const auto app = make_app(commands);
  std::vector<std::string> names;
  for (const auto& c : commands) names.push_back(c.app->get_name());
  return names;
}

}  // namespace tach::cli
