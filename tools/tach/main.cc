// tach: measure how transformer models run. One file per subcommand (cmd_*.cc).
//
// Exit status, the same for every command (docs/cli.md): 0 success; 1 an error in the input or
// while running (the message says which); 2 a usage error (unknown option, missing or malformed
// value); 3 `tach estimate`: the model does not fit; 4 `tach compare --fail-on-regression`: a point
// regressed beyond the limit; 70 an internal error (a bug in tach).
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.h"
#include "run_log.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "verbatim_args.h"

namespace {
constexpr int kUsageError = 2;
constexpr int kInternalError = 70;  // EX_SOFTWARE in sysexits.h
}  // namespace

int main(int argc, char** argv) {
  tach::cli::RunLog run_log(argc, argv);
  tach::set_run_dir_listener([&run_log](const std::string& dir) { run_log.attach(dir); });
  CLI::App app{"tach: measure how transformer models run (latency, throughput, memory, accuracy, profiles)", "tach"};
  app.set_version_flag("--version", std::string("tach 0.1.0"));
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 success, 1 error, 2 usage error, 3 (estimate) does not fit, 4 (compare) regressed beyond\n"
      "--fail-on-regression, 70 internal error.");
  const tach::cli::Command commands[] = {
      tach::cli::add_info_command(app),     tach::cli::add_classify_command(app), tach::cli::add_embed_command(app),
      tach::cli::add_tokenize_command(app), tach::cli::add_bench_command(app),    tach::cli::add_eval_command(app),
      tach::cli::add_run_command(app),      tach::cli::add_generate_command(app), tach::cli::add_profile_command(app),
      tach::cli::add_monitor_command(app),  tach::cli::add_estimate_command(app), tach::cli::add_train_command(app),
      tach::cli::add_merge_command(app),    tach::cli::add_download_command(app), tach::cli::add_dataset_command(app),
      tach::cli::add_compare_command(app),  tach::cli::add_report_command(app),   tach::cli::add_manifest_command(app),
      tach::cli::add_verify_command(app),
  };
  const tach::cli::VerbatimArgs args(argc, argv);
  args.restore_in(app);
  try {
    app.parse(args.for_parse());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version, or the message
    return code == 0 ? 0 : kUsageError;
  }
  try {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
    return 0;
  } catch (const tach::Error& e) {
    std::cerr << "tach: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tach: internal error: " << e.what() << "\n";
    return kInternalError;
  }
}
