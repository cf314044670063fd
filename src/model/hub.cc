#include "model/hub.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/checkpoint.h"
#include "model/hub_dataset_layout.h"
#include "model/hub_files.h"
#include "model/hub_http.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/runtime.h"

namespace tach::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool env_true(const char* name) {
  const std::string v = env(name);
  return v == "1" || v == "true" || v == "TRUE" || v == "yes" || v == "ON" || v == "on";
}

double env_seconds(const char* name, double fallback) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const double s = std::strtod(v.c_str(), &end);
  check(end && *end == '\0' && s > 0, std::string(name) + "='" + v + "': expected a positive number of seconds");
  return s;
}

std::string read_file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  s.erase(0, s.find_first_not_of(" \t"));
  return s;
}

bool is_hex(const std::string& s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool is_commit(const std::string& rev) { return is_hex(rev, 40); }

std::string normalize_etag(std::string e) {  // W/"abc" or "abc" → abc, as huggingface_hub does
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  while (!e.empty() && e.front() == '"') e.erase(0, 1);
  while (!e.empty() && e.back() == '"') e.pop_back();
  return e;
}

std::vector<std::string> auth_headers(const HubSettings& s) {
  if (s.token.empty()) return {};
  return {"Authorization: Bearer " + s.token};
}

// Percent-encodes what a path segment cannot hold; '/' stays (file paths in resolve URLs).
std::string url_path(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string repo_url_prefix(const HubRepo& r, const HubSettings& s) {
  return s.endpoint + (r.type == "dataset" ? "/datasets/" : "/") + r.id;
}

[[noreturn]] void throw_http(const HubRepo& repo, const HubSettings& s, long status, const std::string& what,
                             const std::string& url) {
  if (status == 401 || status == 403) {
    const std::string with = s.token.empty()
                                 ? "no token was sent. Set HF_TOKEN, or save one in " + s.token_file +
                                       " (HF_TOKEN_PATH names another file; `huggingface-cli login` writes it)"
                                 : "the token sent (from " + (env("HF_TOKEN").empty() ? s.token_file : "HF_TOKEN") +
                                       ") is not allowed to read it: accept the model's conditions on its Hub "
                                       "page, or use a token that can";
    throw Error(repo.describe() + ": the Hub answered " + std::to_string(status) + " for " + what +
                ": the repository is gated or private, and " + with);
  }
  if (status == 404) throw Error(repo.describe() + ": " + what + " not found (404 from " + url + ")");
  throw Error(repo.describe() + ": " + what + ": the Hub answered HTTP " + std::to_string(status) + " (" + url + ")");
}

HttpRequest request(const std::string& url, const HubSettings& s, double timeout) {
  HttpRequest r;
  r.url = url;
  r.headers = auth_headers(s);
  r.connect_timeout_s = timeout;
  r.stall_timeout_s = timeout;
  return r;
}

std::string human_mib(int64_t b) {
  char buf[32];
  if (b < 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / (1024.0 * 1024.0));
  return buf;
}

// The progress bar: one line redrawn on stderr, at most ten times a second.
class ProgressLine {
 public:
  ProgressLine(std::string name, int64_t already, bool enabled)
      : name_(std::move(name)),
        already_(already),
        tty_(enabled && progress_style() == ProgressStyle::Bar),
        t0_(clock::now()) {}
  void update(int64_t now, int64_t total) {
    if (!tty_) return;
    const auto t = clock::now();
    if (t - last_ < std::chrono::milliseconds(100) && now < total) return;
    last_ = t;
    const double s = std::chrono::duration<double>(t - t0_).count();
    char line[512];
    std::snprintf(line, sizeof line, "\r  %s  %s / %s  %.1f MiB/s   ", name_.c_str(), human_mib(already_ + now).c_str(),
                  total > 0 ? human_mib(already_ + total).c_str() : "?", s > 0 ? double(now) / s / 1048576.0 : 0.0);
    std::cerr << line << std::flush;
    drawn_ = true;
  }
  void done(int64_t bytes, int64_t resumed_at) {
    const double s = std::chrono::duration<double>(clock::now() - t0_).count();
    if (drawn_) std::cerr << "\r\033[K";
    char line[512];
    std::snprintf(line, sizeof line, "fetched %s (%s in %.1f s%s)\n", name_.c_str(), human_mib(bytes).c_str(), s,
                  resumed_at > 0 ? (", resumed at " + human_mib(resumed_at)).c_str() : "");
    std::cerr << line << std::flush;
  }

 private:
  using clock = std::chrono::steady_clock;
  std::string name_;
  int64_t already_;
  bool tty_, drawn_ = false;
  clock::time_point t0_, last_{};
};

int64_t file_size_or_zero(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

}  // namespace

HubSettings HubSettings::from_environment() {
  HubSettings s;
  if (const std::string e = env("HF_ENDPOINT"); !e.empty()) s.endpoint = e;
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  s.cache_dir = hf_hub_cache_dir();
  const std::string home =
      env("HF_HOME").empty()
          ? (fs::path(env("HOME").empty() ? "/root" : env("HOME")) / ".cache" / "huggingface").string()
          : env("HF_HOME");
  s.token_file = env("HF_TOKEN_PATH").empty() ? (fs::path(home) / "token").string() : env("HF_TOKEN_PATH");
  s.token = env("HF_TOKEN");
  if (s.token.empty() && fs::is_regular_file(s.token_file)) s.token = trim(read_file_text(s.token_file));
  s.offline = env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE");
  s.etag_timeout_s = env_seconds("HF_HUB_ETAG_TIMEOUT", 10);
  s.download_timeout_s = env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
  s.progress_bar = !env_true("HF_HUB_DISABLE_PROGRESS_BARS");
  return s;
}

std::string HubRepo::folder() const {
  std::string name = id;
  for (size_t p = name.find('/'); p != std::string::npos; p = name.find('/', p + 2)) name.replace(p, 1, "--");
  return (type == "dataset" ? "datasets--" : "models--") + name;
}

std::string HubRepo::describe() const { return (type == "dataset" ? "dataset " : "") + id + "@" + revision; }

HubRevision hub_list_files(const HubRepo& repo, const HubSettings& s) {
  check(!s.offline, repo.describe() + ": HF_HUB_OFFLINE is set, so the Hub is not contacted, and the cache (" +
                        s.cache_dir + ") does not hold it");
  const std::string url = s.endpoint + "/api/" + (repo.type == "dataset" ? "datasets/" : "models/") + repo.id +
                          "/revision/" + url_path(repo.revision) + "?blobs=true";
  HttpRequest r = request(url, s, s.etag_timeout_s);
  r.total_timeout_s = std::max(60.0, s.etag_timeout_s);
  HttpResponse resp;
  try {
    resp = http_fetch(r);
  } catch (const Error& e) {
    throw Error(repo.describe() + ": the Hub (" + s.endpoint +
                ", HF_ENDPOINT) could not be "
                "reached: " +
                e.what() +
                ". With no network, HF_HUB_OFFLINE=1 says so, and a local directory works "
                "as the model");
  }
  if (resp.status != 200) throw_http(repo, s, resp.status, "the revision's file list", url);
  json j;
  try {
    j = json::parse(resp.body);
  } catch (const json::exception& e) { throw Error(url + ": the answer is not JSON (" + std::string(e.what()) + ")"); }
  HubRevision rev;
  rev.commit = j.value("sha", std::string());
  check(is_commit(rev.commit), url + ": the answer names no commit (\"sha\")");
  check(j.contains("siblings") && j["siblings"].is_array(), url + ": the answer lists no files (\"siblings\")");
  for (const auto& f : j["siblings"]) {
    HubFile hf;
    hf.path = f.value("rfilename", std::string());
    if (hf.path.empty()) continue;
    if (f.contains("size") && f["size"].is_number_integer()) hf.size = f["size"].get<int64_t>();
    hf.blob_id = f.value("blobId", std::string());
    if (f.contains("lfs") && f["lfs"].is_object()) {
      hf.lfs_sha256 = f["lfs"].value("sha256", std::string());
      if (f["lfs"].contains("size") && f["lfs"]["size"].is_number_integer()) hf.size = f["lfs"]["size"].get<int64_t>();
    }
    rev.files.push_back(std::move(hf));
  }
  return rev;
}

std::string hub_download_file(const HubRepo& repo, const std::string& commit, const HubFile& file,
                              const HubSettings& s) {
  check(!file.path.empty() && file.path.find("..") == std::string::npos && file.path[0] != '/',
        repo.describe() + ": refusing the file name '" + file.path + "'");
  const fs::path storage = fs::path(s.cache_dir) / repo.folder();
  const fs::path pointer = storage / "snapshots" / commit / file.path;
  if (fs::exists(pointer)) return pointer.string();  // follows the link: the blob is there
  check(!s.offline, repo.describe() + ": " + file.path + " is not in the cache and HF_HUB_OFFLINE is set");

  // Metadata: a HEAD without following the redirect to the CDN, whose answer carries the
  // commit, the ETag (X-Linked-Etag for LFS files: their sha256) and the size.
  std::string url = repo_url_prefix(repo, s) + "/resolve/" + commit + "/" + url_path(file.path);
  HttpResponse head;
  for (int hop = 0;; ++hop) {
    HttpRequest r = request(url, s, s.etag_timeout_s);
    r.head = true;
    r.follow_redirects = false;
    r.total_timeout_s = s.etag_timeout_s * 3;
    head = http_fetch(r);
    const std::string loc = head.header("location");
    // A relative redirect is the Hub itself (a renamed repository): follow it for the metadata.
    if (head.status >= 300 && head.status < 400 && !loc.empty() && loc[0] == '/' && hop < 5) {
      url = s.endpoint + loc;
      continue;
    }
    break;
  }
  if (head.status >= 400) throw_http(repo, s, head.status, "file '" + file.path + "'", url);
  const std::string etag =
      normalize_etag(head.header("x-linked-etag").empty() ? head.header("etag") : head.header("x-linked-etag"));
  check(!etag.empty() && etag.find('/') == std::string::npos,
        url + ": the answer has no usable ETag, so the file cannot be cached or verified");
  int64_t size = file.size;
  if (const std::string ls = head.header("x-linked-size"); !ls.empty()) size = std::stoll(ls);
  else if (const std::string cl = head.header("content-length"); !cl.empty() && head.status == 200)
    size = std::stoll(cl);
  const std::string download_url =
      head.status >= 300 && !head.header("location").empty() && head.header("location")[0] != '/'
          ? head.header("location")
          : url;
  // What the bytes must hash to: an LFS file's sha256 (its ETag), a small file's git blob id.
  const std::string sha256 = !file.lfs_sha256.empty() ? file.lfs_sha256 : (is_hex(etag, 64) ? etag : "");
  const std::string sha1 =
      sha256.empty() ? (!file.blob_id.empty() ? file.blob_id : (is_hex(etag, 40) ? etag : "")) : "";

  const fs::path blob = storage / "blobs" / etag;
  {
    FileLock lock((fs::path(s.cache_dir) / ".locks" / repo.folder() / (etag + ".lock")).string());
    if (!fs::exists(blob)) {
      std::error_code ec;
      fs::create_directories(blob.parent_path(), ec);
      const std::string part = blob.string() + ".incomplete";
      const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      check(fd >= 0, part + ": cannot write (" + std::strerror(errno) + ")");
      struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
      } closer{fd};
      int64_t have = file_size_or_zero(part);
      if (size >= 0 && have > size) {  // longer than the file: not a prefix of it
        check(::ftruncate(fd, 0) == 0, part + ": cannot truncate");
        have = 0;
      }
      const int64_t resumed_at = have;
      ProgressLine bar(repo.id + "/" + file.path, have, s.progress_bar);
      for (int attempt = 0; size < 0 || have < size; ++attempt) {
        HttpRequest r = request(download_url, s, s.download_timeout_s);
        if (download_url != url) r.headers.clear();  // the CDN's signed URL needs no token
        try {
          const HttpResponse got =
              http_download(r, fd, have, [&](int64_t now, int64_t total) { bar.update(now, total); });
          if (got.status == 416 && size >= 0 && have == size) break;  // nothing left to fetch
          if (got.status != 200 && got.status != 206) throw_http(repo, s, got.status, "file '" + file.path + "'", url);
          have = file_size_or_zero(part);
          if (size < 0) break;  // no size to compare with: what arrived is the file
          check(have == size, repo.describe() + ": " + file.path + ": the server sent " + std::to_string(have) +
                                  " bytes of " + std::to_string(size));
        } catch (const Error& e) {
          have = file_size_or_zero(part);
          if (attempt < s.retries && std::string(e.what()).find(": the Hub answered") == std::string::npos &&
              std::string(e.what()).find("not found (404") == std::string::npos)
            continue;
          throw Error(std::string(e.what()) + ". " + std::to_string(have) + " bytes are kept in " + part +
                      ": run again to resume from there");
        }
      }
      const std::string got_hash = !sha256.empty() ? sha256_of_file(part)
                                   : !sha1.empty() ? git_blob_sha1_of_file(part)
                                                   : "";
      const std::string want_hash = !sha256.empty() ? sha256 : sha1;
      if (got_hash != want_hash) {
        fs::remove(part, ec);  // never kept: a resume would only extend wrong bytes
        throw Error(repo.describe() + ": " + file.path + ": the downloaded bytes do not match the Hub's " +
                    (sha256.empty() ? "git blob SHA-1" : "sha256") + " (expected " + want_hash + ", got " + got_hash +
                    "); the partial file was deleted and nothing was cached");
      }
      check(::fsync(fd) == 0, part + ": cannot flush to disk (" + std::strerror(errno) + ")");
      fs::rename(part, blob, ec);
      check(!ec, blob.string() + ": cannot rename the verified download into place (" + ec.message() + ")");
      bar.done(file_size_or_zero(blob.string()), resumed_at);
    }
  }
  make_relative_symlink(blob.string(), pointer.string());
  return pointer.string();
}

namespace {

// The names tach reads from a model repository; weights and sentence-transformers module configs
// are added below. Nothing else is fetched: no pickles (.bin, .pt, .pth, .pkl, .ckpt), no ONNX,
// TF or Flax weights.
const std::set<std::string>& wanted_names() {
  static const std::set<std::string> names = {"config.json",
                                              "generation_config.json",
                                              "tokenizer.json",
                                              "tokenizer_config.json",
                                              "special_tokens_map.json",
                                              "added_tokens.json",
                                              "vocab.txt",
                                              "vocab.json",
                                              "merges.txt",
                                              "modules.json",
                                              "sentence_bert_config.json",
                                              "config_sentence_transformers.json"};
  return names;
}

const HubFile* find_file(const HubRevision& rev, const std::string& path) {
  for (const auto& f : rev.files)
    if (f.path == path) return &f;
  return nullptr;
}

}  // namespace

std::string hub_cached_model(const HubRepo& repo, const HubSettings& s, std::string* commit_out) {
  const fs::path storage = fs::path(s.cache_dir) / repo.folder();
  std::string commit;
  const fs::path ref = storage / "refs" / repo.revision;
  if (fs::is_regular_file(ref)) commit = trim(read_file_text(ref));
  else if (fs::is_directory(storage / "snapshots" / repo.revision)) commit = repo.revision;  // a commit given directly
  if (commit.empty()) return "";
  const fs::path snap = storage / "snapshots" / commit;
  if (!fs::exists(snap / "config.json")) return "";
  bool weights = fs::exists(snap / "model.safetensors");
  if (!weights && fs::exists(snap / "model.safetensors.index.json")) {
    weights = true;
    try {
      const json j = json::parse(read_file_text(snap / "model.safetensors.index.json"));
      for (const auto& [k, v] : j.at("weight_map").items())
        if (!v.is_string() || !fs::exists(snap / v.get<std::string>())) weights = false;
    } catch (const std::exception&) { weights = false; }
  }
  if (!weights) return "";
  if (commit_out) *commit_out = commit;
  return snap.string();
}

std::string hub_download_model(const HubRepo& repo, const HubSettings& s) {
  const HubRevision rev = hub_list_files(repo, s);
  std::vector<const HubFile*> todo;
  for (const auto& f : rev.files)
    if (wanted_names().count(f.path)) todo.push_back(&f);
  check(find_file(rev, "config.json"),
        repo.describe() + " (commit " + rev.commit + ") has no config.json: it is not a transformers model repository");
  const HubFile* single = find_file(rev, "model.safetensors");
  const HubFile* index = find_file(rev, "model.safetensors.index.json");
  if (!single && !index) {
    std::string pickles;
    for (const auto& f : rev.files)
      if (f.path.size() > 4 && (f.path.rfind(".bin") == f.path.size() - 4 || f.path.rfind(".pt") == f.path.size() - 3))
        pickles += " " + f.path;
    throw Error(repo.describe() + " has no model.safetensors" +
                (pickles.empty() ? ""
                                 : " (only" + pickles +
                                       ", PyTorch pickles, which tach never fetches: loading a "
                                       "pickle can run arbitrary code)") +
                ". Use a revision with safetensors weights (the Hub's convert bot opens one as a pull request: "
                "ORG/NAME@refs/pr/N)");
  }
  std::string snap = (fs::path(s.cache_dir) / repo.folder() / "snapshots" / rev.commit).string();
  for (const HubFile* f : todo) hub_download_file(repo, rev.commit, *f, s);
  if (single) {
    hub_download_file(repo, rev.commit, *single, s);
  } else {
    const std::string idx = hub_download_file(repo, rev.commit, *index, s);
    std::set<std::string> shards;
    try {
      const json index_json = json::parse(read_file_text(idx));
      for (const auto& [k, v] : index_json.at("weight_map").items()) shards.insert(v.get<std::string>());
    } catch (const std::exception& e) {
      throw Error(idx + ": not a valid safetensors index (" + std::string(e.what()) + ")");
    }
    for (const auto& shard : shards) {
      const HubFile* f = find_file(rev, shard);
      check(f != nullptr, repo.describe() + ": model.safetensors.index.json lists shard " + shard +
                              ", which the repository does not hold");
      hub_download_file(repo, rev.commit, *f, s);
    }
  }
  // sentence-transformers modules keep their configs in their own folders (1_Pooling/config.json).
  if (fs::exists(fs::path(snap) / "modules.json")) {
    try {
      for (const auto& m : json::parse(read_file_text(fs::path(snap) / "modules.json"))) {
        const std::string p = m.value("path", std::string());
        if (p.empty()) continue;
        for (const char* name : {"config.json", "sentence_bert_config.json"})
          if (const HubFile* f = find_file(rev, p + "/" + name)) hub_download_file(repo, rev.commit, *f, s);
      }
    } catch (const json::exception&) {
      // A malformed modules.json is reported when the model is loaded, with the file named.
    }
  }
  if (repo.revision != rev.commit)
    write_small_file_atomically((fs::path(s.cache_dir) / repo.folder() / "refs" / repo.revision).string(), rev.commit);
  return snap;
}

bool is_hub_dataset_spec(const std::string& spec) { return spec.rfind("hf://datasets/", 0) == 0; }

std::vector<std::string> hub_dataset_files(const std::string& spec, const std::string& split, const HubSettings& s) {
  check(is_hub_dataset_spec(spec), spec + ": not an hf://datasets/ORG/NAME[@REV][/PATH] name");
  const std::string rest = spec.substr(std::string("hf://datasets/").size());
  const auto slash1 = rest.find('/');
  check(slash1 != std::string::npos && slash1 > 0, spec + ": expected hf://datasets/ORG/NAME[@REV][/PATH]");
  const auto slash2 = rest.find('/', slash1 + 1);
  std::string name = rest.substr(0, slash2), path = slash2 == std::string::npos ? "" : rest.substr(slash2 + 1);
  while (!path.empty() && path.back() == '/') path.pop_back();
  HubRepo repo;
  repo.type = "dataset";
  if (const auto at = name.find('@'); at != std::string::npos) {
    repo.revision = name.substr(at + 1);
    name = name.substr(0, at);
  }
  repo.id = name;
  check(!repo.id.empty() && !repo.revision.empty(), spec + ": expected hf://datasets/ORG/NAME[@REV][/PATH]");
  const fs::path storage = fs::path(s.cache_dir) / repo.folder();
  // PATH is a file (taken whatever its split), or a configuration's folder (its split's files).
  auto choose = [&](const std::vector<std::string>& listed) {
    if (!path.empty() && std::find(listed.begin(), listed.end(), path) != listed.end()) {
      check(is_dataset_data_file(path), spec + ": tach reads CSV, TSV, JSON, JSONL and Parquet datasets");
      return std::vector<std::string>{path};
    }
    return choose_split_files(listed, path, split, spec);
  };
  if (s.offline) {  // the cache only: the ref's snapshot, and the files in it
    std::string commit = is_commit(repo.revision) ? repo.revision : "";
    if (commit.empty() && fs::is_regular_file(storage / "refs" / repo.revision))
      commit = trim(read_file_text(storage / "refs" / repo.revision));
    const fs::path snapshot = storage / "snapshots" / commit;
    check(!commit.empty() && fs::is_directory(snapshot),
          spec + ": HF_HUB_OFFLINE is set, so the Hub is not contacted, and the cache (" + s.cache_dir +
              ") holds no snapshot of " + repo.id + "@" + repo.revision + " (fetch it once online: tach download " +
              spec + (split.empty() ? "" : " --split " + split) + ")");
    std::vector<std::string> cached;
    for (const auto& e : fs::recursive_directory_iterator(snapshot))
      if (!e.is_directory())
        cached.push_back(e.path().lexically_relative(snapshot).generic_string());  // links to blobs: not resolved
    std::vector<std::string> out;
    for (const auto& f : choose(cached)) out.push_back((snapshot / f).string());
    return out;
  }
  const HubRevision rev = hub_list_files(repo, s);
  std::vector<std::string> listed;
  for (const auto& f : rev.files) listed.push_back(f.path);
  std::vector<std::string> out;
  for (const auto& f : choose(listed)) out.push_back(hub_download_file(repo, rev.commit, *find_file(rev, f), s));
  if (repo.revision != rev.commit) write_small_file_atomically((storage / "refs" / repo.revision).string(), rev.commit);
  return out;
}

}  // namespace tach::model

namespace tach {

std::string download_model(const std::string& hub_id) {
  model::HubRepo repo;
  repo.id = hub_id.substr(0, hub_id.find('@'));
  if (const auto at = hub_id.find('@'); at != std::string::npos) repo.revision = hub_id.substr(at + 1);
  check(std::count(repo.id.begin(), repo.id.end(), '/') == 1 && repo.id.front() != '/' && repo.id.back() != '/' &&
            !repo.revision.empty(),
        "'" + hub_id + "' is not a hub id: expected ORG/NAME[@REVISION]");
  return model::hub_download_model(repo, model::HubSettings::from_environment());
}

std::vector<std::string> download_dataset_files(const std::string& spec, const std::string& split) {
  const auto named = model::named_dataset_spec(spec, true);
  check(named.has_value(), "'" + spec +
                               "' is not a Hub dataset: expected hf://datasets/ORG/NAME[@REV][/PATH], "
                               "ORG/NAME[/CONFIG] or a canonical name such as glue/sst2");
  return model::hub_dataset_files(*named, split, model::HubSettings::from_environment());
}

}  // namespace tach
