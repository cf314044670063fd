// tach: measure how transformer models run. One file per subcommand (cmd_*.cc).
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.h"
#include "tach/error.h"

int main(int argc, char** argv) {
  CLI::App app{"tach: measure how transformer models run (latency, throughput, memory, accuracy, profiles)"};
  app.set_version_flag("--version", std::string("tach 0.1.0"));
  app.require_subcommand(1);
  const tach::cli::Command commands[] = {
      tach::cli::add_info_command(app),
      tach::cli::add_classify_command(app),
      tach::cli::add_tokenize_command(app),
      tach::cli::add_bench_command(app),
      tach::cli::add_eval_command(app),
      tach::cli::add_run_command(app),
      tach::cli::add_generate_command(app),
      tach::cli::add_profile_command(app),
      tach::cli::add_monitor_command(app),
      tach::cli::add_estimate_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
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
    return 2;
  }
}
