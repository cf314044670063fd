// The decoders that work token list to token list, as tokenizers' decode_chain: Replace,
// ByteFallback, Fuse, Strip, Metaspace, and Sequence, which runs a chain of decoders (Llama 2,
// Mistral and Gemma decode with Replace("▁", " ") → ByteFallback → Fuse (→ Strip(" ", 1, 0));
// byte-fallback Unigram models with Metaspace → ByteFallback → Fuse). The whole-string decoders
// (WordPiece, ByteLevel) take part in a Sequence as one step that fuses what it is given.
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/post_processors.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace tach::tokenizer {

namespace {

using Tokens = std::vector<std::string>;

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
      if (is_valid_utf8(bytes)) out.push_back(bytes);
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
  StripDecoder(std::string content, int64_t start, int64_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
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

// The replacement character becomes a space, except in the first token, where it is dropped
// (the space the pre-tokenizer prepended) unless the prepend scheme is "never".
class MetaspaceDecoder final : public ChainDecoder {
 public:
  MetaspaceDecoder(std::string replacement, bool drop_in_first)
      : replacement_(std::move(replacement)), drop_in_first_(drop_in_first) {}
  Tokens chain(Tokens tokens) const override {
    for (size_t k = 0; k < tokens.size(); ++k) {
      const std::string& t = tokens[k];
      std::string out;
      for (size_t i = 0; i < t.size();) {
        if (!replacement_.empty() && t.compare(i, replacement_.size(), replacement_) == 0) {
          if (!(k == 0 && drop_in_first_)) out += ' ';
          i += replacement_.size();
        } else {
          out += t[i++];
        }
      }
      tokens[k] = std::move(out);
    }
    return tokens;
  }

 private:
  std::string replacement_;
  bool drop_in_first_;
};

class SequenceDecoder final : public ChainDecoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  Tokens chain(Tokens tokens) const override {
    for (const auto& d : steps_) {
      if (const auto* c = dynamic_cast<const ChainDecoder*>(d.get())) tokens = c->chain(std::move(tokens));
      else tokens = {d->decode(tokens)};
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
  if (type == "Metaspace") {
    // Files from before prepend_scheme say add_prefix_space.
    const std::string scheme = j.str_or("prepend_scheme", j.boolean_or("add_prefix_space", true) ? "always" : "never");
    if (scheme != "always" && scheme != "first" && scheme != "never")
      j.at("prepend_scheme").fail("expected always, first or never");
    return std::make_unique<MetaspaceDecoder>(j.str_or("replacement", "\xe2\x96\x81"), scheme != "never");
  }
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
