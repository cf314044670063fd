#include "tokenizer/precompiled.h"

#include <openssl/evp.h>

#include <cstring>

#include "tokenizer/unicode.h"

namespace tach::tokenizer {

namespace {

// Darts-clone's unit layout.
bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xff); }
size_t offset(uint32_t unit) { return size_t(unit >> 10) << ((unit & (1u << 9)) >> 6); }

[[noreturn]] void malformed(const std::string& what) { throw Error("precompiled_charsmap: " + what); }

}  // namespace

CharsMap::CharsMap(std::string_view blob) {
  if (blob.empty()) return;  // a model without normalization rules
  if (blob.size() < 4) malformed("shorter than its 4-byte header");
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(blob[size_t(i)]);
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4)
    malformed("the trie's size (" + std::to_string(trie_bytes) + " bytes) does not fit the " +
              std::to_string(blob.size()) + "-byte blob");
  trie_.resize(trie_bytes / 4);
  for (size_t u = 0; u < trie_.size(); ++u) {
    const auto* p = reinterpret_cast<const unsigned char*>(blob.data()) + 4 + 4 * u;
    trie_[u] = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  }
  replacements_ = std::string(blob.substr(4 + trie_bytes));
  if (!is_valid_utf8(replacements_)) malformed("the replacement strings are not UTF-8");
}

uint32_t CharsMap::unit_at(size_t node) const {
  if (node >= trie_.size()) malformed("the trie points outside itself");
  return trie_[node];
}

std::optional<std::string_view> CharsMap::transform(std::string_view s) const {
  if (trie_.empty()) return std::nullopt;
  size_t node = offset(trie_[0]);
  for (unsigned char c : s) {
    if (c == 0) break;
    node ^= c;
    const uint32_t unit = unit_at(node);
    if (label(unit) != c) return std::nullopt;
    node ^= offset(unit);
    if (!has_leaf(unit)) continue;
    const size_t at = value(unit_at(node));
    if (at >= replacements_.size()) malformed("a rule points past the replacement strings");
    const size_t end = replacements_.find('\0', at);
    std::string_view out = std::string_view(replacements_).substr(at, end == std::string::npos ? end : end - at);
    if (!is_valid_utf8(out)) malformed("a rule's replacement starts inside a character");
    return out;
  }
  return std::nullopt;
}

std::optional<std::string> base64_decode(std::string_view s) {
  std::string out(s.size() / 4 * 3 + 3, '\0');
  EVP_ENCODE_CTX* ctx = EVP_ENCODE_CTX_new();
  check(ctx != nullptr, "base64: out of memory");
  EVP_DecodeInit(ctx);
  int n = 0, tail = 0;
  const bool ok = EVP_DecodeUpdate(ctx, reinterpret_cast<unsigned char*>(out.data()), &n,
                                   reinterpret_cast<const unsigned char*>(s.data()), int(s.size())) >= 0 &&
                  EVP_DecodeFinal(ctx, reinterpret_cast<unsigned char*>(out.data()) + n, &tail) == 1;
  EVP_ENCODE_CTX_free(ctx);
  if (!ok) return std::nullopt;
  out.resize(size_t(n) + size_t(tail));
  return out;
}

namespace {

class Precompiled final : public Normalizer {
 public:
  explicit Precompiled(CharsMap map) : map_(std::move(map)) {}

  void normalize(NormalizedString& s) const override {
    if (map_.empty()) return;
    const std::string& t = s.text();
    std::vector<std::pair<char32_t, int>> chars;
    chars.reserve(t.size());
    bool modified = false;
    for (size_t g = 0; g < t.size();) {
      const size_t g_end = grapheme_end(t, g);
      const std::string_view cluster(t.data() + g, g_end - g);
      std::optional<std::string_view> whole;
      if (cluster.size() < 6) whole = map_.transform(cluster);
      if (whole) {
        replace(chars, cluster, *whole);
        modified = true;
      } else {
        for (size_t i = g; i < g_end;) {
          const size_t at = i;
          const char32_t c = next_codepoint(t, i);
          const std::string_view one(t.data() + at, i - at);
          if (auto r = map_.transform(one)) {
            replace(chars, one, *r);
            modified = true;
          } else {
            chars.emplace_back(c, 0);
          }
        }
      }
      g = g_end;
    }
    if (modified) s.transform(chars);
  }

 private:
  // tokenizers' bookkeeping for replacing `from` by `to`: extra code points count as inserted;
  // missing ones are charged to the last code point so far (to none at the very start).
  static void replace(std::vector<std::pair<char32_t, int>>& chars, std::string_view from, std::string_view to) {
    int n_from = 0, n_to = 0;
    for (size_t i = 0; i < from.size(); ++n_from) next_codepoint(from, i);
    for (size_t i = 0; i < to.size(); ++n_to) chars.emplace_back(next_codepoint(to, i), 0);
    const int diff = n_to - n_from;
    if (diff > 0)
      for (int k = 0; k < diff; ++k) chars[chars.size() - 1 - size_t(k)].second = 1;
    else if (diff < 0 && !chars.empty()) chars.back().second += diff;
  }

  CharsMap map_;
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled(CharsMap map) { return std::make_unique<Precompiled>(std::move(map)); }

std::unique_ptr<Normalizer> make_precompiled(const JsonAt& j) {
  JsonAt field = j.at("precompiled_charsmap");
  if (field.value.is_null()) return make_precompiled(CharsMap(""));
  if (!field.value.is_string()) field.fail("expected a base64 string");
  const auto blob = base64_decode(field.value.get_ref<const std::string&>());
  if (!blob) field.fail("not valid base64");
  try {
    return make_precompiled(CharsMap(*blob));
  } catch (const Error& e) { field.fail(e.what()); }
}

}  // namespace tach::tokenizer
