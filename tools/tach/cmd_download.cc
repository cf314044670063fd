// tach download: fetch a model (or a dataset file) from the Hugging Face Hub into the cache now.
#include <iostream>

#include "commands.h"
#include "tach/model.h"

namespace tach::cli {

namespace {

struct DownloadOptions {
  std::string what;
};

int run_download(const DownloadOptions& opt) {
  const std::string path = opt.what.rfind("hf://datasets/", 0) == 0 ? download_dataset_file(opt.what)
                                                                     : download_model(opt.what);
  std::cout << path << "\n";
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
                  "ORG/NAME[@REVISION], or a dataset file hf://datasets/ORG/NAME[@REVISION][/PATH] (CSV, TSV, JSON, "
                  "JSONL). Environment: HF_ENDPOINT, HF_TOKEN (or the token file, HF_TOKEN_PATH), HF_HUB_CACHE or "
                  "HF_HOME, HF_HUB_OFFLINE=1, HF_HUB_DOWNLOAD_TIMEOUT and HF_HUB_ETAG_TIMEOUT (seconds), "
                  "HF_HUB_DISABLE_PROGRESS_BARS=1")
      ->required();
  return {sub, [opt] { return run_download(*opt); }};
}

}  // namespace tach::cli
