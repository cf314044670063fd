#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "tach/error.h"
#include "tach/tokenizer.h"

namespace tach::tokenizer {

char32_t next_codepoint(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len = 0;
  char32_t c = 0, min = 0;
  if ((b0 & 0xe0) == 0xc0) len = 2, c = b0 & 0x1f, min = 0x80;
  else if ((b0 & 0xf0) == 0xe0) len = 3, c = b0 & 0x0f, min = 0x800;
  else if ((b0 & 0xf8) == 0xf0) len = 4, c = b0 & 0x07, min = 0x10000;
  else {
    ++i;
    return 0xfffd;
  }
  if (i + size_t(len) > s.size()) {
    ++i;
    return 0xfffd;
  }
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + size_t(k)]);
    if ((b & 0xc0) != 0x80) {
      ++i;
      return 0xfffd;
    }
    c = (c << 6) | (b & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
    ++i;
    return 0xfffd;
  }
  i += size_t(len);
  return c;
}

size_t utf8_length(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xc0 | (c >> 6));
    out += char(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += char(0xe0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3f));
    out += char(0x80 | (c & 0x3f));
  } else {
    out += char(0xf0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3f));
    out += char(0x80 | ((c >> 6) & 0x3f));
    out += char(0x80 | (c & 0x3f));
  }
}

static utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0d);  // fast path; same answer as the tables
  if (c == 0x85) return true;
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool is_control_or_other(char32_t c) {
  if (c < 0x80) return c < 0x20 || c == 0x7f;
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CN ||
         cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return is_ascii_punctuation(c) && c != '$' && c != '+' && c != '<' && c != '=' && c != '>' && c != '^' &&
           c != '`' && c != '|' && c != '~';  // ASCII symbols are S*, not P*
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_PC || cat == UTF8PROC_CATEGORY_PD || cat == UTF8PROC_CATEGORY_PS ||
         cat == UTF8PROC_CATEGORY_PE || cat == UTF8PROC_CATEGORY_PI || cat == UTF8PROC_CATEGORY_PF ||
         cat == UTF8PROC_CATEGORY_PO;
}

bool is_ascii_punctuation(char32_t c) {
  return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e);
}

bool is_nonspacing_mark(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_numeric(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool is_alphabetic(char32_t c) {
  const auto cat = category(c);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) || cat == UTF8PROC_CATEGORY_NL;
}

void append_lowercase(std::u32string& out, char32_t c) {
  // The one unconditional multi-character lowercase mapping in SpecialCasing.txt.
  if (c == 0x130) {
    out += U'i';
    out += char32_t(0x307);
    return;
  }
  out += static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

void append_uppercase(std::u32string& out, char32_t c) {
  out += static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}

std::string normalize(std::string_view s, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::nfc: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::nfd: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::nfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::nfkd: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()), &out,
                   static_cast<utf8proc_option_t>(options));
  check(n >= 0, std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> guard(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

int combining_class(char32_t c) { return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class; }

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) n = 1, cp = c;
    else if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (n > 1 && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) return false;
    i += n;
  }
  return true;
}

size_t grapheme_end(std::string_view s, size_t i) {
  utf8proc_int32_t state = 0;
  auto prev = static_cast<utf8proc_int32_t>(next_codepoint(s, i));
  while (i < s.size()) {
    size_t j = i;
    const auto c = static_cast<utf8proc_int32_t>(next_codepoint(s, j));
    if (utf8proc_grapheme_break_stateful(prev, c, &state)) break;
    prev = c;
    i = j;
  }
  return i;
}

}  // namespace tach::tokenizer

namespace tach {

std::string lowercase_text(const std::string& utf8) {
  std::u32string lowered;
  for (size_t i = 0; i < utf8.size();) tokenizer::append_lowercase(lowered, tokenizer::next_codepoint(utf8, i));
  std::string out;
  for (char32_t c : lowered) tokenizer::append_utf8(out, c);
  return out;
}

}  // namespace tach
