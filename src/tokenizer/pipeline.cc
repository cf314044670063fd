#include "tokenizer/pipeline.h"

#include <algorithm>
#include <filesystem>

#include "core/parallel.h"
#include "tokenizer/truncation.h"
#include "tokenizer/word_cache.h"

namespace tach {

namespace tk = tokenizer;

namespace {

class Pipeline final : public Tokenizer {
 public:
  explicit Pipeline(tk::Parts p) : p_(std::move(p)) {
    for (const auto& a : p_.added) {
      added_by_id_[a.id] = &a;
      added_by_content_[a.content] = a.id;
    }
  }

  Encoding encode(const std::string& text, const EncodeOptions& opt) const override {
    Encoding e = encode_raw(text);
    finish(e, nullptr, opt, text, "");
    return e;
  }

  Encoding encode_pair(const std::string& a, const std::string& b, const EncodeOptions& opt) const override {
    Encoding ea = encode_raw(a), eb = encode_raw(b);
    finish(ea, &eb, opt, a, b);
    return ea;
  }

  std::vector<Encoding> encode_batch(const std::vector<std::string>& texts, const EncodeOptions& opt) const override {
    std::vector<Encoding> out(texts.size());
    EncodeOptions each = opt;
    if (opt.padding && opt.padding->strategy == Padding::Strategy::longest) each.padding.reset();
    core::parallel_for(int64_t(texts.size()), 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[size_t(i)] = encode(texts[size_t(i)], each);
    });
    if (opt.padding && opt.padding->strategy == Padding::Strategy::longest) {
      size_t longest = 0;
      for (const auto& e : out) longest = std::max(longest, e.size());
      const size_t target = tk::padded_length(longest, *opt.padding);
      for (auto& e : out) tk::pad(e, target, *opt.padding);
    }
    return out;
  }

  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override {
    std::vector<std::string> tokens;
    for (int32_t id : ids) {
      auto a = added_by_id_.find(id);
      if (a != added_by_id_.end() && a->second->special && skip_special) continue;
      if (auto t = id_to_token(id)) tokens.push_back(*t);
    }
    return p_.decoder->decode(tokens);
  }

  std::string decode_tokens(const std::vector<std::string>& tokens) const override {
    return p_.decoder->decode(tokens);
  }

  std::optional<int32_t> token_to_id(const std::string& token) const override {
    auto a = added_by_content_.find(token);
    if (a != added_by_content_.end()) return a->second;
    return p_.model->vocab().find(token);
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    auto a = added_by_id_.find(id);
    if (a != added_by_id_.end()) return a->second->content;
    if (const std::string* t = p_.model->vocab().token(id)) return *t;
    return std::nullopt;
  }
  size_t vocab_size() const override {
    size_t extra = 0;
    for (const auto& a : p_.added)
      if (!p_.model->vocab().token(a.id)) ++extra;
    return p_.model->vocab().size() + extra;
  }
  std::string describe() const override { return p_.description; }

 private:
  void push(Encoding& e, int32_t id, std::string token, tk::Span s, int32_t word) const {
    e.ids.push_back(id);
    e.tokens.push_back(std::move(token));
    e.offsets.push_back({s.start, s.end});
    e.type_ids.push_back(0);
    e.special_tokens_mask.push_back(0);
    e.attention_mask.push_back(1);
    e.word_ids.push_back(word);
    e.sequence_ids.push_back(0);
  }

  // Truncate, post-process (overflowing windows too), then pad to a fixed length: the order
  // tokenizers uses.
  void finish(Encoding& a, Encoding* b, const EncodeOptions& opt, const std::string& ta, const std::string& tb) const {
    if (opt.truncation) {
      const size_t added =
          opt.add_special_tokens && p_.post_processor ? p_.post_processor->added_tokens(b != nullptr) : 0;
      check(opt.truncation->max_length >= added, "truncation max_length " + std::to_string(opt.truncation->max_length) +
                                                     " leaves no room: the " + "post-processor adds " +
                                                     std::to_string(added) + " special tokens");
      tk::truncate_encodings(a, b, *opt.truncation, opt.truncation->max_length - added);
    }
    auto post = [&](Encoding& x, Encoding* y) {
      p_.post_processor ? p_.post_processor->process(x, y, opt.add_special_tokens, ta, tb) : tk::concatenate(x, y);
    };
    // Overflowing windows are post-processed like the main encoding. For pairs, tokenizers'
    // Encoding::merge_with gives, for each window a_i of the first sequence, (a_i, B) and then
    // (a_i, b_j) for every window b_j of the second; then (A, b_j) for every b_j.
    std::vector<Encoding> a_over = std::move(a.overflowing), b_over;
    a.overflowing.clear();
    if (b) {
      b_over = std::move(b->overflowing);
      b->overflowing.clear();
    }
    std::vector<Encoding> over;
    const bool keep_types = p_.post_processor && p_.post_processor->overflow_keeps_sequence_type_ids();
    // x_over, y_over: whether x, y are overflowing windows (rather than the main encodings).
    auto combined = [&](Encoding x, const Encoding* y, bool x_over, bool y_over) {
      Encoding yy = y ? *y : Encoding();
      post(x, y ? &yy : nullptr);
      if (keep_types)
        for (size_t i = 0; i < x.size(); ++i)
          if ((x.sequence_ids[i] == 0 && x_over) || (x.sequence_ids[i] == 1 && y_over))
            x.type_ids[i] = x.sequence_ids[i];
      return x;
    };
    for (const auto& ao : a_over) {
      over.push_back(combined(ao, b, true, false));
      for (const auto& bo : b_over) over.push_back(combined(ao, &bo, true, true));
    }
    for (const auto& bo : b_over) over.push_back(combined(a, &bo, false, true));
    post(a, b);
    a.overflowing = std::move(over);
    if (opt.padding && opt.padding->strategy == Padding::Strategy::fixed)
      tk::pad(a, tk::padded_length(opt.padding->length, *opt.padding), *opt.padding);
  }

  // Tokens of one text, without post-processing. A word is one piece the pre-tokenizer left (or
  // one added token), numbered in order as tokenizers numbers its splits.
  Encoding encode_raw(const std::string& text) const {
    Encoding e;
    std::vector<tk::NormalizedString> pieces;
    std::vector<tk::Token> tokens;
    int32_t word = 0;
    for (const auto& seg : tk::split_added(text, p_.added, false)) {
      if (seg.token) {
        push(e, *seg.token, added_by_id_.at(*seg.token)->content, {uint32_t(seg.start), uint32_t(seg.end)}, word++);
        continue;
      }
      tk::NormalizedString ns(std::string_view(text).substr(seg.start, seg.end - seg.start), uint32_t(seg.start));
      if (p_.normalizer) p_.normalizer->normalize(ns);
      // Tokens added with normalized=true are found in the normalized text.
      for (const auto& sub : tk::split_added(ns.text(), p_.added, true)) {
        if (sub.token) {
          push(e, *sub.token, added_by_id_.at(*sub.token)->content, ns.original(sub.start, sub.end), word++);
          continue;
        }
        pieces.clear();
        pieces.push_back(ns.slice(sub.start, sub.end));
        if (p_.pre_tokenizer) p_.pre_tokenizer->split(pieces);
        for (const auto& piece : pieces) {
          if (piece.text().empty()) continue;  // tokenizers drops empty splits
          tokens.clear();
          if (!cache_.lookup(piece.text(), tokens)) {
            p_.model->tokenize(piece.text(), tokens);
            cache_.insert(piece.text(), tokens.begin(), tokens.end());
          }
          for (auto& t : tokens) push(e, t.id, std::move(t.value), piece.original(t.start, t.end), word);
          ++word;
        }
      }
    }
    return e;
  }

  tk::Parts p_;
  mutable tk::WordCache cache_;
  std::unordered_map<int32_t, const tk::AddedToken*> added_by_id_;
  std::unordered_map<std::string, int32_t> added_by_content_;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  if (fs::is_regular_file(path)) return tk::make_tokenizer(tk::load_tokenizer_json(path));
  if (!fs::is_directory(path)) throw Error(path + ": no such tokenizer file or directory");
  if (fs::is_regular_file(fs::path(path) / "tokenizer.json"))
    return tk::make_tokenizer(tk::load_tokenizer_json((fs::path(path) / "tokenizer.json").string()));
  return tk::make_tokenizer(tk::load_legacy(path));
}

namespace tokenizer {
std::unique_ptr<Tokenizer> make_tokenizer(Parts parts) {
  if (!parts.decoder) parts.decoder = make_decoder(JsonAt{json(), "", ""});
  return std::make_unique<Pipeline>(std::move(parts));
}
}  // namespace tokenizer

}  // namespace tach
