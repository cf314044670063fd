// tach download: fetch a model (or a dataset file) from the Hugging Face Hub into the cache now.
#include <iostream>

#include "commands.h"
#include "tach/model.h"

namespace tach::cli {

namespace {

struct DownloadOptions {
  std::string what, split;
};

int run_download(const DownloadOptions& opt) {
  // A dataset: hf://datasets/..., or a model-like name with --split (glue/sst2 --split validation).
  if (opt.what.rfind("hf://datasets/", 0) == 0 || !opt.split.empty()) {
    for (const auto& path : download_dataset_files(opt.what, opt.split)) std::cout << path << "\n";
    return 0;
  }
  std::cout << download_model(opt.what) << "\n";
  return 0;
}

}  // namespace

Command add_download_command(CLI::App& app) {
  auto opt = std::make_shared<DownloadOptions>();
  CLI::App* sub = app.add_subcommand(
      "download",
      "Fetch a model from the Hugging Face Hub into its cache now (what tach reads: config, safetensors weights, "
      "tokenizer and sentence-transformers files; never pickles), asking the Hub for the revision's latest commit; "
      "prints the snapshot directory. Other commands fetch a hub id only when it is not cached");
  sub->add_option("what", opt->what,
                  "ORG/NAME[@REVISION], or a dataset hf://datasets/ORG/NAME[@REVISION][/PATH] (a CSV, TSV, JSON, "
                  "JSONL or Parquet file, or a configuration's folder with --split), or a dataset name with --split "
                  "(glue/sst2 --split validation). Environment: HF_ENDPOINT, HF_TOKEN (or the token file, "
                  "HF_TOKEN_PATH), HF_HUB_CACHE or "
                  "HF_HOME, HF_HUB_OFFLINE=1, HF_HUB_DOWNLOAD_TIMEOUT and HF_HUB_ETAG_TIMEOUT (seconds), "
                  "HF_HUB_DISABLE_PROGRESS_BARS=1")
      ->required();
  sub->add_option(
      "--split", opt->split,
      "A dataset's split to fetch (every shard of it), for offline runs: e.g. glue/sst2 --split validation");
  return {sub, [opt] { return run_download(*opt); }};
}

}  // namespace tach::cli
