// Regular expressions for Split, Replace and added-token matching: PCRE2 with its JIT, in UTF
// mode with Unicode properties (\p{L}, \p{N}, case-insensitive groups, lookahead), which the
// GPT-2, Qwen2 and Llama-3 split patterns need.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/json_util.h"

namespace tach::tokenizer {

class Regex {
 public:
  // literal: match `pattern` as plain text. Throws naming `where` when it does not compile.
  Regex(const std::string& pattern, bool literal, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches, left to right, as byte ranges [start, end). Empty matches are
  // skipped (the scan moves on by one code point), as tokenizers does.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// {"String": "..."} or {"Regex": "..."}, as tokenizers writes a pattern.
std::unique_ptr<Regex> make_pattern(const JsonAt& j);

}  // namespace tach::tokenizer
