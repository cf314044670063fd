// Downloading from the Hugging Face Hub into the cache layout huggingface_hub uses
// (<cache>/models--ORG--NAME/{blobs,refs,snapshots}), so that Python tools and tach share files
// both ways. The endpoints, headers and environment are huggingface_hub's:
//   GET  {endpoint}/api/{models|datasets}/{id}/revision/{rev}?blobs=true   the file list, the commit
//   HEAD {endpoint}/[datasets/]{id}/resolve/{commit}/{path}                ETag, X-Repo-Commit, X-Linked-*
//   GET  the same URL, redirects followed (the CDN), Range to resume a .incomplete blob
// Every blob is verified (LFS files against their sha256, small files against their git blob
// SHA-1) before it is renamed into place, under a lock in <cache>/.locks, so that two processes
// fetching one file end with one good copy and an interrupted one leaves only a .incomplete file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::model {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT
  std::string cache_dir;                            // HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub
  std::string token;                                // HF_TOKEN, else the token file
  std::string token_file;                           // HF_TOKEN_PATH, else HF_HOME/token (named in messages)
  bool offline = false;                             // HF_HUB_OFFLINE=1 (or TRANSFORMERS_OFFLINE=1)
  double etag_timeout_s = 10;                       // HF_HUB_ETAG_TIMEOUT: the API and HEAD requests
  double download_timeout_s = 10;                   // HF_HUB_DOWNLOAD_TIMEOUT: connect, and the longest stall
  int retries = 2;                                  // transport failures retried (resuming) within one call
  bool progress_bar = true;  // on stderr when it is a terminal (HF_HUB_DISABLE_PROGRESS_BARS=1: off)
  static HubSettings from_environment();
};

struct HubRepo {
  std::string type = "model";  // model | dataset
  std::string id;              // ORG/NAME
  std::string revision = "main";
  std::string folder() const;    // models--ORG--NAME
  std::string describe() const;  // "ORG/NAME@main" (datasets: "dataset ORG/NAME@main")
};

struct HubFile {
  std::string path;
  int64_t size = -1;
  std::string lfs_sha256;  // LFS files
  std::string blob_id;     // the git blob SHA-1 (small files)
};

struct HubRevision {
  std::string commit;
  std::vector<HubFile> files;
};

// The revision's commit and files. 401/403 (gated or private), 404 (no such repo or revision)
// and transport failures are errors that say what to do.
HubRevision hub_list_files(const HubRepo& repo, const HubSettings& settings);

// One file of a commit, into the cache (or found there); returns its path under snapshots/.
std::string hub_download_file(const HubRepo& repo, const std::string& commit, const HubFile& file,
                              const HubSettings& settings);

// The files of a model revision tach reads: config.json, the safetensors weights (single, or the
// index and every shard it lists), tokenizer files, sentence-transformers configs. Never a pickle:
// a repository with only pytorch_model.bin is an error. Writes refs/<revision>; returns the
// snapshot directory.
std::string hub_download_model(const HubRepo& repo, const HubSettings& settings);

// A cached snapshot of the repo that holds what tach needs (config.json and the weights), or "".
std::string hub_cached_model(const HubRepo& repo, const HubSettings& settings, std::string* commit = nullptr);

// "hf://datasets/ORG/NAME[@REV][/PATH]": the data files (CSV, TSV, JSON, JSONL, Parquet) of a
// dataset repository, downloaded (or found in the cache, offline: the snapshot's files are listed
// from disk) through the same path. PATH names a file, or a configuration's folder; otherwise the
// files of `split` (model/hub_dataset_layout.h), shards in order. Returns the local paths.
bool is_hub_dataset_spec(const std::string& spec);
std::vector<std::string> hub_dataset_files(const std::string& spec, const std::string& split,
                                           const HubSettings& settings);

}  // namespace tach::model
