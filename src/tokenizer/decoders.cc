// The decoders that work token list to token list, as tokenizers' decode_chain: Replace,
// ByteFallback, Fuse, Strip, and Sequence, which runs a chain of decoders (Llama 2, Mistral and
// Gemma decode with Replace("▁", " ") → ByteFallback → Fuse (→ Strip(" ", 1, 0))). The
// whole-string decoders (WordPiece, ByteLevel, Metaspace) take part in a Sequence as one step that
// fuses what it is given.
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/post_processors.h"
#include "tokenizer/regex.h"

namespace tach::tokenizer {

namespace {

using Tokens = std::vector<std::string>;

// Whether bytes are well-formed UTF-8 (shortest forms, no surrogates, at most U+10FFFF), as Rust's
// String::from_utf8 accepts them.
bool valid_utf8(const std::string& s) {
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

class ChainDecoder : public Decoder {
 public:
  virtual Tokens chain(Tokens tokens) const = 0;
  std::string decode(const Tokens& tokens) const override {
    std::string out;
    for (const auto& t : chain(tokens)) out += t;
    return out;
  }
};

// Every match of the pattern in each token becomes `content`.
class ReplaceDecoder final : public ChainDecoder {
 public:
  ReplaceDecoder(std::unique_ptr<Regex> re, std::string content) : re_(std::move(re)), content_(std::move(content)) {}
  Tokens chain(Tokens tokens) const override {
    for (auto& t : tokens) {
      std::string out;
      size_t last = 0;
      for (const auto& [a, b] : re_->find_all(t)) {
        out.append(t, last, a - last);
        out += content_;
        last = b;
      }
      out.append(t, last, std::string::npos);
      t = std::move(out);
    }
    return tokens;
  }

 private:
  std::unique_ptr<Regex> re_;
  std::string content_;
};

// Runs of <0xNN> tokens become the text their bytes spell; bytes that are not valid UTF-8 become
// one U+FFFD each, as tokenizers' ByteFallback.
class ByteFallbackDecoder final : public ChainDecoder {
 public:
  Tokens chain(Tokens tokens) const override {
    Tokens out;
    std::string bytes;
    auto flush = [&] {
      if (bytes.empty()) return;
      if (valid_utf8(bytes))
        out.push_back(bytes);
      else
        for (size_t i = 0; i < bytes.size(); ++i) out.push_back("\xef\xbf\xbd");
      bytes.clear();
    };
    for (auto& t : tokens) {
      int b = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') b = hex_byte(t[3], t[4]);
      if (b >= 0) {
        bytes += char(b);
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    return out;
  }

 private:
  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  static int hex_byte(char hi, char lo) {
    const int h = hex_digit(hi), l = hex_digit(lo);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class FuseDecoder final : public ChainDecoder {
 public:
  Tokens chain(Tokens tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    return {all};
  }
};

// Up to `start` leading and `stop` trailing occurrences of one character cut from each token.
class StripDecoder final : public ChainDecoder {
 public:
  StripDecoder(std::string content, int64_t start, int64_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  Tokens chain(Tokens tokens) const override {
    const size_t n = content_.size();
    for (auto& t : tokens) {
      size_t a = 0, b = t.size();
      for (int64_t i = 0; i < start_ && a + n <= b && t.compare(a, n, content_) == 0; ++i) a += n;
      for (int64_t i = 0; i < stop_ && b >= a + n && t.compare(b - n, n, content_) == 0; ++i) b -= n;
      t = t.substr(a, b - a);
    }
    return tokens;
  }

 private:
  std::string content_;
  int64_t start_, stop_;
};

class SequenceDecoder final : public ChainDecoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  Tokens chain(Tokens tokens) const override {
    for (const auto& d : steps_) {
      if (const auto* c = dynamic_cast<const ChainDecoder*>(d.get()))
        tokens = c->chain(std::move(tokens));
      else
        tokens = {d->decode(tokens)};
    }
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_chain_decoder(const JsonAt& j) {
  const std::string type = j.type();
  if (type == "Replace") return std::make_unique<ReplaceDecoder>(make_pattern(j.at("pattern")), j.str("content"));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const int64_t start = j.integer_or("start", 0), stop = j.integer_or("stop", 0);
    if (start < 0 || stop < 0) j.fail("Strip's start and stop must not be negative");
    return std::make_unique<StripDecoder>(j.str("content"), start, stop);
  }
  if (type == "Sequence") {
    const JsonAt list = j.at("decoders");
    list.expect_array();
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.value.size(); ++i) steps.push_back(make_decoder(list.at(i)));
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  return nullptr;
}

}  // namespace tach::tokenizer
