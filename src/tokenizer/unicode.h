// Unicode for the tokenizers: UTF-8 decoding, categories and normalization forms, all from
// utf8proc's tables. Character classes follow the definitions Hugging Face `tokenizers` uses
// (Rust's char methods and the unicode_categories crate), so that ids match.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tach::tokenizer {

// Decodes one code point at s[i], advancing i. Invalid UTF-8 (bad lead byte, truncated or
// overlong sequence, surrogate, > U+10FFFF) yields U+FFFD and advances by one byte: the
// documented way tach handles text that is not valid UTF-8.
char32_t next_codepoint(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t c);
size_t utf8_length(char32_t c);
// Whether bytes are well-formed UTF-8 (shortest forms, no surrogates, at most U+10FFFF), as Rust's
// String::from_utf8 accepts them.
bool is_valid_utf8(std::string_view s);

bool is_whitespace(char32_t c);         // Rust char::is_whitespace (White_Space property)
bool is_control_or_other(char32_t c);   // categories Cc Cf Cn Co Cs (unicode_categories' is_other)
bool is_punctuation(char32_t c);        // categories Pc Pd Ps Pe Pi Pf Po
bool is_ascii_punctuation(char32_t c);  // !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
bool is_nonspacing_mark(char32_t c);    // category Mn
bool is_chinese_char(char32_t c);       // the CJK blocks BERT pads with spaces
bool is_numeric(char32_t c);            // categories Nd Nl No (Rust char::is_numeric)
bool is_alphabetic(char32_t c);         // letters (L*) and Nl, approximating Rust's is_alphabetic
// Full lowercase mapping as Rust's char::to_lowercase (1 or more code points).
void append_lowercase(std::u32string& out, char32_t c);
void append_uppercase(std::u32string& out, char32_t c);

// The end of the extended grapheme cluster (UAX #29) that starts at byte i of valid UTF-8 s.
size_t grapheme_end(std::string_view s, size_t i);

enum class NormalForm { nfc, nfd, nfkc, nfkd };
// Normalizes a UTF-8 string (valid, as the pipeline produces it).
std::string normalize(std::string_view s, NormalForm form);
// Canonical combining class, 0 for starters.
int combining_class(char32_t c);

}  // namespace tach::tokenizer
