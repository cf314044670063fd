#include "tokenizer/added_tokens.h"

#include "tokenizer/unicode.h"

namespace tach::tokenizer {

namespace {

bool is_word_char(char32_t c) { return c == U'_' || is_alphabetic(c) || is_numeric(c); }

// The code point that ends right before byte i, and the one starting at i.
char32_t char_before(const std::string& t, size_t i) {
  if (i == 0) return 0;
  size_t s = i - 1;
  while (s > 0 && (static_cast<unsigned char>(t[s]) & 0xc0) == 0x80) --s;
  return next_codepoint(t, s);
}
char32_t char_at(const std::string& t, size_t i) { return i < t.size() ? next_codepoint(t, i) : 0; }

}  // namespace

std::vector<Segment> split_added(const std::string& text, const std::vector<AddedToken>& tokens, bool normalized) {
  std::vector<Segment> out;
  size_t pos = 0, emitted = 0;
  while (pos < text.size()) {
    // Leftmost match, then longest.
    size_t best_start = std::string::npos, best_len = 0;
    const AddedToken* best = nullptr;
    for (const auto& t : tokens) {
      if (t.normalized != normalized || t.content.empty()) continue;
      for (size_t p = text.find(t.content, pos); p != std::string::npos; p = text.find(t.content, p + 1)) {
        if (t.single_word && (is_word_char(char_before(text, p)) || is_word_char(char_at(text, p + t.content.size()))))
          continue;
        if (p < best_start || (p == best_start && t.content.size() > best_len)) {
          best_start = p;
          best_len = t.content.size();
          best = &t;
        }
        break;
      }
    }
    if (!best) break;
    size_t a = best_start, b = best_start + best_len;
    if (best->lstrip)
      while (a > emitted && is_whitespace(char_before(text, a))) {
        size_t s = a - 1;
        while (s > 0 && (static_cast<unsigned char>(text[s]) & 0xc0) == 0x80) --s;
        a = s;
      }
    if (best->rstrip)
      while (b < text.size()) {
        size_t i = b;
        if (!is_whitespace(next_codepoint(text, i))) break;
        b = i;
      }
    if (a > emitted) out.push_back({emitted, a, std::nullopt});
    out.push_back({a, b, best->id});
    emitted = pos = b;
  }
  if (emitted < text.size()) out.push_back({emitted, text.size(), std::nullopt});
  return out;
}

}  // namespace tach::tokenizer
