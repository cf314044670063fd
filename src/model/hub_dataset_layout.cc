#include "model/hub_dataset_layout.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "tach/error.h"

namespace tach::model {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string joined(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// Datasets that lived without an organisation and now live under one (the Hub redirects the old
// names; tach asks for the new ones). Workflows and papers still use the old names.
const std::map<std::string, std::string>& canonical_names() {
  static const std::map<std::string, std::string> names = {
      {"ag_news", "fancyzhx/ag_news"},
      {"emotion", "dair-ai/emotion"},
      {"glue", "nyu-mll/glue"},
      {"imdb", "stanfordnlp/imdb"},
      {"rotten_tomatoes", "cornell-movie-review-data/rotten_tomatoes"},
      {"sst2", "stanfordnlp/sst2"},
      {"super_glue", "aps/super_glue"},
      {"tweet_eval", "cardiffnlp/tweet_eval"},
  };
  return names;
}

bool plain_name(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c == '.'; }) &&
         s != "." && s != "..";
}

}  // namespace

bool is_dataset_data_file(const std::string& path) {
  for (const char* ext : {".csv", ".tsv", ".json", ".jsonl", ".parquet"})
    if (ends_with(path, ext)) return true;
  return false;
}

std::string split_of_data_file(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  std::string stem = name.substr(0, name.find('.'));
  if (!stem.empty() && std::all_of(stem.begin(), stem.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const std::string dir = parent_of(path);
    return dir.substr(dir.rfind('/') + 1);  // CONFIG/SPLIT/0000.parquet
  }
  for (size_t dash = stem.find('-'); dash != std::string::npos; dash = stem.find('-', dash + 1))
    if (dash + 1 < stem.size() && std::isdigit(static_cast<unsigned char>(stem[dash + 1]))) return stem.substr(0, dash);
  return stem;
}

std::vector<std::string> choose_split_files(const std::vector<std::string>& paths, const std::string& prefix,
                                            const std::string& split, const std::string& what) {
  std::map<std::string, std::vector<std::string>> by_split;
  for (const auto& p : paths)
    if ((prefix.empty() || p.rfind(prefix + "/", 0) == 0) && is_dataset_data_file(p))
      by_split[split_of_data_file(p)].push_back(p);
  std::set<std::string> splits;
  for (const auto& [s, _] : by_split) splits.insert(s);
  check(!by_split.empty(), what + ": holds no CSV, TSV, JSON, JSONL or Parquet file" +
                               (prefix.empty() ? std::string() : " under " + prefix + "/"));
  std::string chosen = split;
  if (chosen.empty()) {
    check(by_split.size() == 1, what + ": holds the splits " + joined(splits) + "; choose one with --split");
    chosen = by_split.begin()->first;
  }
  const auto it = by_split.find(chosen);
  check(it != by_split.end(), what + ": no split '" + chosen + "'; the splits are " + joined(splits));
  std::vector<std::string> files = it->second;
  // One configuration's files only: the folder above the split's own folder or file.
  std::set<std::string> configs;
  for (const auto& f : files) {
    std::string dir = parent_of(f);
    if (dir.substr(dir.rfind('/') + 1) == chosen) dir = parent_of(dir);
    configs.insert(dir.empty() ? "(top level)" : dir);
  }
  check(configs.size() == 1, what + ": split '" + chosen + "' is in several configurations (" + joined(configs) +
                                 "); name one: hf://datasets/ORG/NAME/CONFIG, or NAME/CONFIG");
  std::sort(files.begin(), files.end());
  return files;
}

std::optional<std::string> named_dataset_spec(const std::string& name, bool allow_org_names) {
  if (name.rfind("hf://datasets/", 0) == 0) return name;
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t slash = name.find('/', at);
    parts.push_back(name.substr(at, slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  if (parts.size() > 3 || !std::all_of(parts.begin(), parts.end(), plain_name)) return std::nullopt;
  const auto& canonical = canonical_names();
  if (const auto it = canonical.find(parts[0]); it != canonical.end() && parts.size() <= 2)
    return "hf://datasets/" + it->second + (parts.size() == 2 ? "/" + parts[1] : "");
  if (allow_org_names && parts.size() >= 2) return "hf://datasets/" + name;
  return std::nullopt;
}

}  // namespace tach::model
