// Model output per pre-token, remembered: text repeats its words, and a BPE word costs a heap
// of merges while a cache hit costs one lookup (tokenizers keeps such a cache too). Shared by
// all threads of a batch; bounded, and cleared when full.
#pragma once

#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/models.h"

namespace tach::tokenizer {

class WordCache {
 public:
  explicit WordCache(size_t capacity = 1 << 16) : capacity_(capacity) {}
  // Appends the cached tokens of `word` to out; false on a miss.
  bool lookup(const std::string& word, std::vector<Token>& out) const {
    std::shared_lock lock(mu_);
    auto it = map_.find(word);
    if (it == map_.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }
  void insert(const std::string& word, std::vector<Token>::const_iterator first,
              std::vector<Token>::const_iterator last) {
    if (word.size() > kMaxWordBytes) return;
    std::unique_lock lock(mu_);
    if (map_.size() >= capacity_) map_.clear();
    map_.emplace(word, std::vector<Token>(first, last));
  }

 private:
  static constexpr size_t kMaxWordBytes = 256;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::vector<Token>> map_;
  size_t capacity_;
};

}  // namespace tach::tokenizer
