// A string being tokenized, with every byte tied to the bytes of the original text it came
// from, so that offsets survive normalization, splitting and byte-level mapping.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/unicode.h"

namespace tach::tokenizer {

struct Span {
  uint32_t start = 0, end = 0;  // byte range in the original text
};

class NormalizedString {
 public:
  NormalizedString() = default;
  // text is a slice of the original starting at byte `offset`; invalid UTF-8 becomes U+FFFD.
  NormalizedString(std::string_view text, uint32_t offset);

  const std::string& text() const { return text_; }
  const std::vector<Span>& spans() const { return spans_; }
  bool empty() const { return text_.empty(); }
  // The original range covered by bytes [a, b) of text(); an empty range maps to a point.
  Span original(size_t a, size_t b) const;

  // Replaces each code point by zero or more code points (fn appends them); new bytes keep
  // the original span of the code point they came from.
  void map_chars(const std::function<void(char32_t, std::u32string&)>& fn);
  void normalize(NormalForm form);
  // Bytes [a, b) as a new string (a and b on code point boundaries).
  NormalizedString slice(size_t a, size_t b) const;
  void prepend(const std::string& s);
  // tokenizers' transform: the text becomes the listed code points, each with its change
  // against the current text read left to right: 0 replaces the next code point (and takes its
  // span), -n replaces it and removes n more, 1 is inserted (and takes the span of the byte
  // before it).
  void transform(const std::vector<std::pair<char32_t, int>>& chars);  // new bytes map to the first byte's span start
  // Byte-level: each byte becomes the code point GPT-2's table gives it.
  void to_byte_level();

  // Replaces the text and its spans (a normalizer's result), keeping the origin.
  void assign(std::string text, std::vector<Span> spans);
  // Where this string starts in the original text, whatever normalization removed since
  // (tokenizers' offsets_original().0): Metaspace's "first" prepend scheme reads it.
  uint32_t origin() const { return origin_; }

 private:
  std::string text_;
  std::vector<Span> spans_;  // one per byte of text_
  uint32_t origin_ = 0;
};

// GPT-2's byte → code point table (printable bytes map to themselves), and its inverse.
char32_t byte_to_char(uint8_t b);
int char_to_byte(char32_t c);  // -1 when c is not in the table

}  // namespace tach::tokenizer
