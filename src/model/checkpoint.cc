#include "model/checkpoint.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/hub.h"
#include "model/safetensors.h"
#include "tach/error.h"

namespace tach::model {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string hf_hub_cache_dir() {
  if (const char* v = std::getenv("HF_HUB_CACHE"); v && *v) return v;
  if (const char* v = std::getenv("HF_HOME"); v && *v) return (fs::path(v) / "hub").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : "/root") / ".cache" / "huggingface" / "hub").string();
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool looks_like_hub_id(const std::string& s) {
  // ORG/NAME with exactly one slash, no leading dot or slash, no spaces.
  if (s.empty() || s[0] == '.' || s[0] == '/' || s[0] == '~') return false;
  const auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || s.find('/', slash + 1) != std::string::npos) return false;
  return s.find(' ') == std::string::npos;
}

ModelLocation resolve_hub(const std::string& spec) {
  HubRepo repo;
  repo.id = spec;
  if (auto at = spec.find('@'); at != std::string::npos) {
    repo.id = spec.substr(0, at);
    repo.revision = spec.substr(at + 1);
    check(!repo.revision.empty(), "model '" + spec + "': empty revision after '@'");
  }
  const HubSettings settings = HubSettings::from_environment();
  std::string commit;
  // A cached snapshot with config.json and its weights is used as it is, without asking the Hub
  // whether the revision moved (tach download ORG/NAME does that).
  std::string snap = hub_cached_model(repo, settings, &commit);
  if (snap.empty()) {
    if (settings.offline) {
      const fs::path storage = fs::path(settings.cache_dir) / repo.folder();
      throw Error("model '" + spec +
                  "' not found: it is not a local directory, and HF_HUB_OFFLINE is set, so the "
                  "Hub is not asked; the cache (" +
                  settings.cache_dir +
                  ") has no complete snapshot of it. Looked at:"
                  "\n  " +
                  fs::absolute(spec).string() + " (local directory)\n  " + (storage / "refs" / repo.revision).string() +
                  "\n  " + (storage / "snapshots").string() +
                  "\nUnset HF_HUB_OFFLINE to download it (or run `tach download " + repo.id +
                  "` where there is a network), or set "
                  "HF_HUB_CACHE / HF_HOME to the cache that holds it.");
    }
    snap = hub_download_model(repo, settings);
    commit = fs::path(snap).filename().string();
  }
  ModelLocation loc;
  loc.kind = ModelLocation::Kind::hub;
  loc.spec = spec;
  loc.dir = snap;
  loc.revision = commit;
  return loc;
}

}  // namespace

ModelLocation resolve_model(const std::string& spec) {
  check(!spec.empty(), "no model given: pass --model with a directory, a hub id ORG/NAME, or preset:NAME");
  ModelLocation loc;
  loc.spec = spec;
  if (spec.rfind("preset:", 0) == 0) {
    loc.kind = ModelLocation::Kind::preset;
    loc.preset = spec.substr(7);
    return loc;
  }
  if (fs::is_directory(spec)) {
    loc.kind = ModelLocation::Kind::local;
    loc.dir = spec;
    if (!fs::is_regular_file(fs::path(spec) / "config.json"))
      throw Error(spec +
                  ": directory has no config.json (a Hugging Face model directory holds config.json and "
                  "model.safetensors)");
    return loc;
  }
  if (looks_like_hub_id(spec.substr(0, spec.find('@')))) return resolve_hub(spec);
  throw Error("model '" + spec + "' not found: no such directory (" + fs::absolute(spec).string() +
              "), and it is not a hub id ORG/NAME[@REV] or preset:NAME");
}

void WeightStore::add(const std::string& name, StoredTensor t) {
  check(tensors_.emplace(name, std::move(t)).second, description + ": tensor '" + name + "' appears twice");
}

const StoredTensor* WeightStore::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> v;
  for (const auto& [k, _] : tensors_) v.push_back(k);
  return v;
}

namespace {
void add_file(WeightStore& store, const fs::path& path, const std::set<std::string>* only) {
  auto file = std::make_shared<SafetensorsFile>(SafetensorsFile::open(path.string()));
  for (const auto& [k, v] : file->header().metadata) store.metadata[k] = v;
  store.page_droppers.push_back([file] { file->drop_resident_pages(); });
  for (const auto& e : file->header().entries) {
    if (only && !only->count(e.name)) {
      throw Error(path.string() + ": holds tensor '" + e.name +
                  "', which model.safetensors.index.json assigns to another file or not at all");
    }
    StoredTensor t;
    t.dtype = e.dtype;
    t.shape = e.shape;
    t.file = path.filename().string();
    const SafetensorsEntry* entry = &e;
    t.load = [file, entry] { return file->tensor(*entry); };
    store.add(e.name, std::move(t));
  }
}
}  // namespace

int64_t safetensors_bytes(const std::string& dir) {
  int64_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".safetensors") bytes += static_cast<int64_t>(entry.file_size());
  return bytes;
}

void WeightStore::drop_resident_pages() const {
  for (const auto& drop : page_droppers) drop();
}

WeightStore open_checkpoint_weights(const std::string& dir) {
  const fs::path d(dir);
  WeightStore store;
  const fs::path single = d / "model.safetensors";
  const fs::path index = d / "model.safetensors.index.json";
  if (fs::is_regular_file(single)) {
    store.description = single.string();
    add_file(store, single, nullptr);
    return store;
  }
  if (fs::is_regular_file(index)) {
    json j;
    try {
      j = json::parse(read_text(index));
    } catch (const json::exception& e) { throw Error(index.string() + ": not valid JSON: " + e.what()); }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(index.string() + ": missing \"weight_map\" object");
    std::map<std::string, std::set<std::string>> by_file;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string()) throw Error(index.string() + ": weight_map[\"" + it.key() + "\"] must be a file name");
      const std::string f = it->get<std::string>();
      if (f.find('/') != std::string::npos || f == ".." || f.empty())
        throw Error(index.string() + ": weight_map[\"" + it.key() + "\"] names \"" + f +
                    "\", which is not a file in the model directory");
      by_file[f].insert(it.key());
    }
    store.description = index.string() + " (" + std::to_string(by_file.size()) + " shards)";
    for (const auto& [f, names] : by_file) {
      if (!fs::is_regular_file(d / f)) throw Error(index.string() + ": shard " + f + " is missing from " + dir);
      add_file(store, d / f, &names);
    }
    for (const auto& [f, names] : by_file)
      for (const auto& n : names)
        if (!store.find(n)) throw Error(index.string() + ": tensor '" + n + "' is listed in " + f + " but not in it");
    return store;
  }
  for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "model.pth"}) {
    if (fs::exists(d / pickle))
      throw Error(dir + ": has " + pickle +
                  " but no model.safetensors. tach reads only safetensors: PyTorch's .bin "
                  "format is a pickle, and loading a pickle can run arbitrary code. Convert it once with "
                  "transformers (model.save_pretrained(dir, safe_serialization=True)).");
  }
  throw Error(dir + ": no model.safetensors or model.safetensors.index.json");
}

}  // namespace tach::model
