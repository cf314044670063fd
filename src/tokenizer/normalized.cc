#include "tokenizer/normalized.h"

#include <algorithm>
#include <array>

namespace tach::tokenizer {

NormalizedString::NormalizedString(std::string_view text, uint32_t offset) : origin_(offset) {
  text_.reserve(text.size());
  spans_.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t start = i;
    const char32_t c = next_codepoint(text, i);
    const size_t before = text_.size();
    append_utf8(text_, c);
    for (size_t k = before; k < text_.size(); ++k) spans_.push_back({offset + uint32_t(start), offset + uint32_t(i)});
  }
}

void NormalizedString::assign(std::string text, std::vector<Span> spans) {
  text_ = std::move(text);
  spans_ = std::move(spans);
}

Span NormalizedString::original(size_t a, size_t b) const {
  if (spans_.empty()) return {};
  if (a >= b) {
    const uint32_t p = a < spans_.size() ? spans_[a].start : spans_.back().end;
    return {p, p};
  }
  return {spans_[a].start, spans_[b - 1].end};
}

void NormalizedString::map_chars(const std::function<void(char32_t, std::u32string&)>& fn) {
  std::string out;
  std::vector<Span> spans;
  out.reserve(text_.size());
  spans.reserve(text_.size());
  std::u32string produced;
  for (size_t i = 0; i < text_.size();) {
    const size_t start = i;
    const char32_t c = next_codepoint(text_, i);
    produced.clear();
    fn(c, produced);
    for (char32_t p : produced) {
      const size_t before = out.size();
      append_utf8(out, p);
      for (size_t k = before; k < out.size(); ++k) spans.push_back({spans_[start].start, spans_[i - 1].end});
    }
  }
  text_ = std::move(out);
  spans_ = std::move(spans);
}

void NormalizedString::transform(const std::vector<std::pair<char32_t, int>>& chars) {
  std::string out;
  std::vector<Span> spans;
  out.reserve(text_.size());
  spans.reserve(text_.size());
  const Span first_point = spans_.empty() ? Span{} : Span{spans_.front().start, spans_.front().start};
  size_t offset = 0;  // the next byte of the current text to be replaced
  for (const auto& [c, change] : chars) {
    Span span;
    if (change > 0) {
      span = offset == 0 ? first_point : spans_[offset - 1];
    } else {
      // Past the end only when an earlier removal was not charged to a code point (tokenizers'
      // Precompiled does that at the start of a string): the last span then.
      span = offset < spans_.size() ? spans_[offset] : (spans_.empty() ? Span{} : spans_.back());
      for (int k = 0; k < 1 - change && offset < text_.size(); ++k) next_codepoint(text_, offset);
    }
    append_utf8(out, c);
    spans.resize(out.size(), span);
  }
  text_ = std::move(out);
  spans_ = std::move(spans);
}

void NormalizedString::normalize(NormalForm form) {
  // ASCII is unchanged by every normal form: skip the library call for the common case.
  bool ascii = true;
  for (char ch : text_) ascii &= static_cast<unsigned char>(ch) < 0x80;
  if (ascii) return;
  std::string whole = tokenizer::normalize(text_, form);
  if (whole == text_) return;
  // Alignment as tokenizers keeps it: normalize runs that start at a starter; within a run the
  // i-th output character takes the span of the i-th source character, and characters beyond
  // the source count (a decomposition's marks) take the last one's. So é decomposed gives e
  // and the accent both é's span, and e + accent composed gives é the span of e alone.
  std::string out;
  std::vector<Span> spans;
  std::vector<Span> source;  // spans of the current run's characters
  size_t run = 0;
  auto flush = [&](size_t end) {
    if (end <= run) return;
    const std::string part = tokenizer::normalize(std::string_view(text_).substr(run, end - run), form);
    size_t k = 0;
    for (size_t i = 0; i < part.size(); ++k) {
      const size_t before = i;
      next_codepoint(part, i);
      const Span sp = source[std::min(k, source.size() - 1)];
      out.append(part, before, i - before);
      spans.insert(spans.end(), i - before, sp);
    }
    run = end;
    source.clear();
  };
  for (size_t i = 0; i < text_.size();) {
    const size_t start = i;
    const char32_t c = next_codepoint(text_, i);
    if (start > run && combining_class(c) == 0) flush(start);
    source.push_back({spans_[start].start, spans_[i - 1].end});
  }
  flush(text_.size());
  if (out != whole) {
    // Composition across starters (Hangul jamo): one span for the whole string.
    spans.assign(whole.size(), {spans_.front().start, spans_.back().end});
    out = std::move(whole);
  }
  text_ = std::move(out);
  spans_ = std::move(spans);
}

NormalizedString NormalizedString::slice(size_t a, size_t b) const {
  NormalizedString n;
  n.assign(text_.substr(a, b - a), std::vector<Span>(spans_.begin() + long(a), spans_.begin() + long(b)));
  // A slice from the start keeps the string's origin (tokenizers keeps the original shift of a
  // split that starts there); a later one starts where its first byte came from.
  n.origin_ = a == 0 || a >= spans_.size() ? origin_ : spans_[a].start;
  return n;
}

void NormalizedString::prepend(const std::string& s) {
  // As tokenizers: the new text replaces the first code point and that code point is put back,
  // so every new byte takes the first code point's span.
  if (spans_.empty()) return;
  const Span at = spans_.front();
  text_.insert(0, s);
  spans_.insert(spans_.begin(), s.size(), at);
}

namespace {
std::array<char32_t, 256> make_byte_table() {
  std::array<char32_t, 256> t{};
  std::array<bool, 256> printable{};
  for (int b = '!'; b <= '~'; ++b) printable[size_t(b)] = true;
  for (int b = 0xa1; b <= 0xac; ++b) printable[size_t(b)] = true;
  for (int b = 0xae; b <= 0xff; ++b) printable[size_t(b)] = true;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) t[size_t(b)] = printable[size_t(b)] ? char32_t(b) : next++;
  return t;
}
const std::array<char32_t, 256>& byte_table() {
  static const auto t = make_byte_table();
  return t;
}
}  // namespace

char32_t byte_to_char(uint8_t b) { return byte_table()[b]; }

int char_to_byte(char32_t c) {
  static const auto inverse = [] {
    std::array<int, 512> inv{};
    inv.fill(-1);
    for (int b = 0; b < 256; ++b) inv[byte_table()[size_t(b)]] = b;
    return inv;
  }();
  return c < 512 ? inverse[c] : -1;
}

void NormalizedString::to_byte_level() {
  std::string out;
  std::vector<Span> spans;
  out.reserve(text_.size() * 2);
  spans.reserve(text_.size() * 2);
  for (size_t i = 0; i < text_.size(); ++i) {
    const size_t before = out.size();
    append_utf8(out, byte_to_char(static_cast<uint8_t>(text_[i])));
    for (size_t k = before; k < out.size(); ++k) spans.push_back(spans_[i]);
  }
  text_ = std::move(out);
  spans_ = std::move(spans);
}

}  // namespace tach::tokenizer
