#include "tokenizer/pre_tokenizers.h"

#include <algorithm>
#include <functional>

#include "tokenizer/regex.h"

namespace tach::tokenizer {

void split_by(const NormalizedString& s, const std::vector<Match>& matches, SplitBehavior behavior,
              std::vector<NormalizedString>& out) {
  struct Part {
    size_t start, end;
    bool remove;
  };
  std::vector<Part> parts;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::removed:
      for (const auto& m : matches) parts.push_back({m.start, m.end, m.is_match});
      break;
    case SplitBehavior::isolated:
      for (const auto& m : matches) parts.push_back({m.start, m.end, false});
      break;
    case SplitBehavior::merged_with_previous:
      for (const auto& m : matches) {
        if (m.is_match && !previous_match && !parts.empty()) parts.back().end = m.end;
        else parts.push_back({m.start, m.end, false});
        previous_match = m.is_match;
      }
      break;
    case SplitBehavior::merged_with_next:
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->is_match && !previous_match && !parts.empty()) parts.back().start = it->start;
        else parts.push_back({it->start, it->end, false});
        previous_match = it->is_match;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    case SplitBehavior::contiguous:
      for (const auto& m : matches) {
        if (m.is_match == previous_match && !parts.empty()) parts.back().end = m.end;
        else parts.push_back({m.start, m.end, false});
        previous_match = m.is_match;
      }
      break;
  }
  for (const auto& p : parts)
    if (!p.remove && p.end > p.start) out.push_back(s.slice(p.start, p.end));
}

namespace {

// Matches for a per-character predicate: each matching code point is its own match.
std::vector<Match> char_matches(const std::string& t, const std::function<bool(char32_t)>& pred) {
  std::vector<Match> m;
  size_t prev = 0;
  for (size_t i = 0; i < t.size();) {
    const size_t start = i;
    const char32_t c = next_codepoint(t, i);
    if (pred(c)) {
      if (prev != start) m.push_back({prev, start, false});
      m.push_back({start, i, true});
      prev = i;
    }
  }
  if (prev != t.size()) m.push_back({prev, t.size(), false});
  return m;
}

std::vector<Match> regex_matches(const std::string& t, const Regex& re, bool invert) {
  std::vector<Match> m;
  size_t prev = 0;
  for (const auto& [a, b] : re.find_all(t)) {
    if (prev != a) m.push_back({prev, a, invert});
    m.push_back({a, b, !invert});
    prev = b;
  }
  if (prev != t.size()) m.push_back({prev, t.size(), invert});
  return m;
}

template <typename MatchFn>
void split_each(std::vector<NormalizedString>& pieces, SplitBehavior behavior, MatchFn&& matches_of) {
  std::vector<NormalizedString> out;
  out.reserve(pieces.size() * 2);
  for (const auto& p : pieces) split_by(p, matches_of(p.text()), behavior, out);
  pieces = std::move(out);
}

bool is_bert_punctuation(char32_t c) { return is_ascii_punctuation(c) || is_punctuation(c); }

class BertPre final : public PreTokenizer {
 public:
  void split(std::vector<NormalizedString>& pieces) const override {
    split_each(pieces, SplitBehavior::removed, [](const std::string& t) { return char_matches(t, is_whitespace); });
    split_each(pieces, SplitBehavior::isolated,
               [](const std::string& t) { return char_matches(t, is_bert_punctuation); });
  }
};

class CharSplit final : public PreTokenizer {
 public:
  CharSplit(std::function<bool(char32_t)> pred, SplitBehavior b) : pred_(std::move(pred)), behavior_(b) {}
  void split(std::vector<NormalizedString>& pieces) const override {
    split_each(pieces, behavior_, [this](const std::string& t) { return char_matches(t, pred_); });
  }

 private:
  std::function<bool(char32_t)> pred_;
  SplitBehavior behavior_;
};

class RegexSplit final : public PreTokenizer {
 public:
  RegexSplit(std::unique_ptr<Regex> re, SplitBehavior b, bool invert)
      : re_(std::move(re)), behavior_(b), invert_(invert) {}
  void split(std::vector<NormalizedString>& pieces) const override {
    split_each(pieces, behavior_, [this](const std::string& t) { return regex_matches(t, *re_, invert_); });
  }

 private:
  std::unique_ptr<Regex> re_;
  SplitBehavior behavior_;
  bool invert_;
};

constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        re_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, false, "ByteLevel") : nullptr) {}
  void split(std::vector<NormalizedString>& pieces) const override {
    if (add_prefix_space_)
      for (auto& p : pieces)
        if (!p.empty() && p.text()[0] != ' ') p.prepend(" ");
    if (re_)
      split_each(pieces, SplitBehavior::isolated,
                 [this](const std::string& t) { return regex_matches(t, *re_, false); });
    for (auto& p : pieces) p.to_byte_level();
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> re_;
};

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, std::string prepend_scheme, bool split)
      : replacement_(replacement), scheme_(std::move(prepend_scheme)), split_(split) {
    append_utf8(replacement_utf8_, replacement_);
  }
  void split(std::vector<NormalizedString>& pieces) const override {
    for (size_t i = 0; i < pieces.size(); ++i) {
      auto& p = pieces[i];
      p.map_chars([this](char32_t c, std::u32string& out) { out += c == U' ' ? replacement_ : c; });
      // "first": only the string that starts the text, as tokenizers' offsets_original().0 == 0
      // (a piece after an added token, or after a split, starts later).
      const bool prepend = scheme_ == "always" || (scheme_ == "first" && p.origin() == 0);
      if (prepend && !p.empty() && p.text().rfind(replacement_utf8_, 0) != 0) p.prepend(replacement_utf8_);
    }
    if (split_)
      split_each(pieces, SplitBehavior::merged_with_next, [this](const std::string& t) {
        return char_matches(t, [this](char32_t c) { return c == replacement_; });
      });
  }

 private:
  char32_t replacement_;
  std::string replacement_utf8_;
  std::string scheme_;
  bool split_;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void split(std::vector<NormalizedString>& pieces) const override {
    for (const auto& p : parts_) p->split(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

SplitBehavior parse_behavior(const JsonAt& j, const std::string& key, SplitBehavior fallback) {
  if (!j.has(key)) return fallback;
  const std::string b = j.str(key);
  if (b == "Removed") return SplitBehavior::removed;
  if (b == "Isolated") return SplitBehavior::isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (b == "Contiguous") return SplitBehavior::contiguous;
  j.at(key).fail("behavior \"" + b +
                 "\": expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonAt& j) {
  if (j.value.is_null()) return nullptr;
  if (!j.value.is_object()) j.fail("expected a pre_tokenizer object or null");
  const std::string type = j.type();
  if (type == "BertPreTokenizer") return std::make_unique<BertPre>();
  if (type == "Whitespace")
    return std::make_unique<RegexSplit>(std::make_unique<Regex>(R"(\w+|[^\w\s]+)", false, "Whitespace"),
                                        SplitBehavior::removed, true);
  if (type == "WhitespaceSplit") return std::make_unique<CharSplit>(is_whitespace, SplitBehavior::removed);
  if (type == "Punctuation")
    return std::make_unique<CharSplit>(is_bert_punctuation, parse_behavior(j, "behavior", SplitBehavior::isolated));
  if (type == "Digits")
    return std::make_unique<CharSplit>(
        is_numeric, j.boolean_or("individual_digits", false) ? SplitBehavior::isolated : SplitBehavior::contiguous);
  if (type == "Split")
    return std::make_unique<RegexSplit>(make_pattern(j.at("pattern")),
                                        parse_behavior(j, "behavior", SplitBehavior::removed),
                                        j.boolean_or("invert", false));
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(j.boolean_or("add_prefix_space", true), j.boolean_or("use_regex", true));
  if (type == "Metaspace") {
    const std::string r = j.str_or("replacement", "\xe2\x96\x81");
    size_t i = 0;
    const char32_t rc = r.empty() ? U'\x2581' : next_codepoint(r, i);
    std::string scheme = j.str_or("prepend_scheme", j.boolean_or("add_prefix_space", true) ? "always" : "never");
    if (scheme != "always" && scheme != "first" && scheme != "never")
      j.at("prepend_scheme").fail("expected always, first or never");
    return std::make_unique<Metaspace>(rc, scheme, j.boolean_or("split", true));
  }
  if (type == "Sequence") {
    JsonAt list = j.at("pretokenizers");
    list.expect_array();
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.value.size(); ++i) {
      auto p = make_pre_tokenizer(list.at(i));
      if (p) parts.push_back(std::move(p));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  j.at("type").fail("pre_tokenizer \"" + type +
                    "\" is not supported (supported: BertPreTokenizer, Whitespace, WhitespaceSplit, Punctuation, "
                    "Digits, Split, ByteLevel, Metaspace, Sequence)");
}

}  // namespace tach::tokenizer
