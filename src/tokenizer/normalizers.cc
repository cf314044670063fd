#include "tokenizer/normalizers.h"

#include <vector>

#include "tokenizer/precompiled.h"
#include "tokenizer/regex.h"

namespace tach::tokenizer {

namespace {

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}
  void normalize(NormalizedString& s) const override {
    if (normalize_ascii(s)) return;
    if (clean_text_)
      s.map_chars([](char32_t c, std::u32string& out) {
        // Removed first: NUL, U+FFFD and control characters other than \t \n \r (so VT, FF and
        // U+0085 go, though they are whitespace); then whitespace becomes a space.
        if (c == 0 || c == 0xfffd) return;
        if (c != '\t' && c != '\n' && c != '\r' && is_control_or_other(c)) return;
        out += is_whitespace(c) ? U' ' : c;
      });
    if (chinese_)
      s.map_chars([](char32_t c, std::u32string& out) {
        if (is_chinese_char(c)) {
          out += U' ';
          out += c;
          out += U' ';
        } else {
          out += c;
        }
      });
    if (strip_accents_) {
      s.normalize(NormalForm::nfd);
      s.map_chars([](char32_t c, std::u32string& out) {
        if (!is_nonspacing_mark(c)) out += c;
      });
    }
    if (lowercase_) s.map_chars([](char32_t c, std::u32string& out) { append_lowercase(out, c); });
  }

 private:
  // All-ASCII text in one byte loop: no CJK, no accents, so only cleaning and lowercasing
  // apply, byte for byte. Returns false (nothing done) when a byte is not ASCII.
  bool normalize_ascii(NormalizedString& s) const {
    const std::string& t = s.text();
    for (char ch : t)
      if (static_cast<unsigned char>(ch) >= 0x80) return false;
    std::string out;
    std::vector<Span> spans;
    out.reserve(t.size());
    spans.reserve(t.size());
    for (size_t i = 0; i < t.size(); ++i) {
      char c = t[i];
      if (clean_text_) {
        if (c == '\t' || c == '\n' || c == '\r') c = ' ';
        else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;  // includes NUL
      }
      if (lowercase_ && c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
      out += c;
      spans.push_back(s.spans()[i]);
    }
    s.assign(std::move(out), std::move(spans));
    return true;
  }

  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm f) : form_(f) {}
  void normalize(NormalizedString& s) const override { s.normalize(form_); }

 private:
  NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(NormalizedString& s) const override {
    s.map_chars([](char32_t c, std::u32string& out) { append_lowercase(out, c); });
  }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedString& s) const override {
    const std::string& t = s.text();
    size_t a = 0, b = t.size();
    if (left_)
      while (a < b) {
        size_t i = a;
        if (!is_whitespace(next_codepoint(t, i))) break;
        a = i;
      }
    if (right_)
      while (b > a) {
        size_t start = b - 1;
        while (start > a && (static_cast<unsigned char>(t[start]) & 0xc0) == 0x80) --start;
        size_t i = start;
        if (!is_whitespace(next_codepoint(t, i))) break;
        b = start;
      }
    s = s.slice(a, b);
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : prefix_(std::move(p)) {}
  void normalize(NormalizedString& s) const override {
    if (!s.empty()) s.prepend(prefix_);
  }

 private:
  std::string prefix_;
};

// Replace(pattern, content): literal string or regex; the replacement's bytes map to the
// span of what they replace.
class Replace final : public Normalizer {
 public:
  Replace(std::unique_ptr<Regex> re, std::string content) : re_(std::move(re)), content_(std::move(content)) {}
  void normalize(NormalizedString& s) const override {
    const std::string& t = s.text();
    std::string out;
    std::vector<Span> spans;
    size_t last = 0;
    for (const auto& [a, b] : re_->find_all(t)) {
      out.append(t, last, a - last);
      spans.insert(spans.end(), s.spans().begin() + long(last), s.spans().begin() + long(a));
      // As tokenizers: the new text counts as inserted after the match is removed, so it takes
      // the span of the byte before it, the match's last (or, for an empty match, the one before).
      const size_t before = b > 0 ? b - 1 : 0;
      const Span sp = b > 0       ? s.spans()[before]
                      : s.empty() ? Span{}
                                  : Span{s.spans().front().start, s.spans().front().start};
      out += content_;
      spans.insert(spans.end(), content_.size(), sp);
      last = b;
    }
    out.append(t, last, std::string::npos);
    spans.insert(spans.end(), s.spans().begin() + long(last), s.spans().end());
    s.assign(std::move(out), std::move(spans));
  }

 private:
  std::unique_ptr<Regex> re_;
  std::string content_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(NormalizedString& s) const override {
    for (const auto& p : parts_)
      if (p) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonAt& j) {
  if (j.value.is_null()) return nullptr;
  if (!j.value.is_object()) j.fail("expected a normalizer object or null");
  const std::string type = j.type();
  if (type == "BertNormalizer") {
    const bool lowercase = j.boolean_or("lowercase", true);
    // A null strip_accents follows lowercase, as in tokenizers.
    const bool strip = j.has("strip_accents") ? j.boolean_or("strip_accents", lowercase) : lowercase;
    return std::make_unique<BertNormalizer>(j.boolean_or("clean_text", true),
                                            j.boolean_or("handle_chinese_chars", true), strip, lowercase);
  }
  if (type == "NFC") return std::make_unique<UnicodeForm>(NormalForm::nfc);
  if (type == "NFD") return std::make_unique<UnicodeForm>(NormalForm::nfd);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(NormalForm::nfkc);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(NormalForm::nfkd);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip")
    return std::make_unique<Strip>(j.boolean_or("strip_left", true), j.boolean_or("strip_right", true));
  if (type == "Prepend") return std::make_unique<Prepend>(j.str("prepend"));
  if (type == "Replace") return std::make_unique<Replace>(make_pattern(j.at("pattern")), j.str("content"));
  if (type == "Precompiled") return make_precompiled(j);
  if (type == "Sequence") {
    JsonAt list = j.at("normalizers");
    list.expect_array();
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.value.size(); ++i) parts.push_back(make_normalizer(list.at(i)));
    return std::make_unique<Sequence>(std::move(parts));
  }
  j.at("type").fail("normalizer \"" + type +
                    "\" is not supported (supported: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, "
                    "Prepend, Precompiled, Sequence)");
}

}  // namespace tach::tokenizer
