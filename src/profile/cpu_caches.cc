// Cache sizes from sysfs (Linux's cacheinfo: one indexN directory per cache cpu0 uses).
#include "profile/cpu_caches.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

namespace tach::profile {

namespace {

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// "32768K" -> 33554432; "32M"; "1024" (bytes); -1 when unreadable.
int64_t parse_size(const std::string& s) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (...) { return -1; }
  const std::string unit = s.substr(used);
  if (unit.empty()) return v;
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  return -1;
}

int64_t read_last_level(const std::string& cache_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int best_level = 0;
  int64_t best = 0;
  for (const auto& entry : fs::directory_iterator(cache_dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const std::string type = first_line(entry.path() / "type");
    if (type != "Data" && type != "Unified") continue;  // an instruction cache holds no operands
    int level = 0;
    try {
      level = std::stoi(first_line(entry.path() / "level"));
    } catch (...) { continue; }
    const int64_t bytes = parse_size(first_line(entry.path() / "size"));
    if (bytes > 0 && (level > best_level || (level == best_level && bytes > best))) best_level = level, best = bytes;
  }
  return best;
}

}  // namespace

int64_t last_level_cache_bytes(const std::string& cache_dir) {
  static std::mutex mu;
  static std::map<std::string, int64_t> known;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(cache_dir);
  if (it == known.end()) it = known.emplace(cache_dir, read_last_level(cache_dir)).first;
  return it->second;
}

}  // namespace tach::profile
