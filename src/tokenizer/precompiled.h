// sentencepiece's normalization, compiled: the Precompiled normalizer of tokenizer.json, which
// carries a sentencepiece model's `precompiled_charsmap` (NFKC and its own rules, e.g. XLM-R's,
// T5's, mBART's) as base64.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/normalizers.h"

namespace tach::tokenizer {

// The blob: a little-endian u32 with the trie's size in bytes, the trie (a Darts-clone double
// array of u32 units over the UTF-8 bytes of each rule's source), then the replacements, each
// NUL-terminated; a rule's value is its replacement's offset. Untrusted input: a malformed blob
// is an Error when parsed or, for a value that points nowhere, when the rule is used.
class CharsMap {
 public:
  explicit CharsMap(std::string_view blob);
  // The replacement of the first (shortest) rule whose source is a prefix of s, if any. As
  // sentencepiece's and tokenizers' lookup, the match need not cover all of s.
  std::optional<std::string_view> transform(std::string_view s) const;
  bool empty() const { return trie_.empty(); }

 private:
  uint32_t unit_at(size_t node) const;
  std::vector<uint32_t> trie_;
  std::string replacements_;
};

// Applies the charsmap as tokenizers does: per grapheme cluster shorter than 6 bytes when the
// whole cluster has a rule, else per code point.
std::unique_ptr<Normalizer> make_precompiled(const JsonAt& j);
std::unique_ptr<Normalizer> make_precompiled(CharsMap map);

// Base64 (RFC 4648, padding optional) to bytes; nullopt when s is not base64.
std::optional<std::string> base64_decode(std::string_view s);

}  // namespace tach::tokenizer
