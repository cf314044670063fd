// One function per subcommand: it registers the subcommand's options and returns how to run it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tach::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit code
};

Command add_info_command(CLI::App& app);
Command add_classify_command(CLI::App& app);
Command add_fill_mask_command(CLI::App& app);
Command add_answer_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_profile_command(CLI::App& app);
Command add_monitor_command(CLI::App& app);
Command add_estimate_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_merge_command(CLI::App& app);
Command add_prune_command(CLI::App& app);
Command add_shrink_command(CLI::App& app);
Command add_embed_command(CLI::App& app);
Command add_download_command(CLI::App& app);
Command add_dataset_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_manifest_command(CLI::App& app);
Command add_verify_command(CLI::App& app);
Command add_analyze_command(CLI::App& app);

}  // namespace tach::cli
