// The Unigram model (sentencepiece's, as tokenizers runs it): the segmentation of a piece into
// vocabulary pieces with the highest total log-probability, found by Viterbi over byte positions.
// A character no piece starts with is the unknown token, scored min(score) - 10; consecutive
// unknowns fuse into one token; with byte_fallback an unknown becomes its bytes' <0xNN> pieces.
#include <cstring>
#include <limits>
#include <unordered_map>

#include "tokenizer/models.h"
#include "tokenizer/unicode.h"

namespace tach::tokenizer {

namespace {

// A byte trie of the vocabulary's pieces: each node's children in one hash map keyed by
// (node, byte), and the id of the piece that ends there (-1: none).
class PieceTrie {
 public:
  PieceTrie() : ends_(1, -1) {}
  void add(const std::string& piece, int32_t id) {
    uint32_t node = 0;
    for (unsigned char b : piece) {
      auto [it, inserted] = next_.try_emplace(key(node, b), uint32_t(ends_.size()));
      if (inserted) ends_.push_back(-1);
      node = it->second;
    }
    ends_[node] = id;
  }
  // Calls fn(length, id) for every piece that is a prefix of s[from:], shortest first.
  template <typename Fn>
  void prefixes(const std::string& s, size_t from, Fn&& fn) const {
    uint32_t node = 0;
    for (size_t i = from; i < s.size(); ++i) {
      auto it = next_.find(key(node, static_cast<unsigned char>(s[i])));
      if (it == next_.end()) return;
      node = it->second;
      if (ends_[node] >= 0) fn(i + 1 - from, ends_[node]);
    }
  }

 private:
  static uint64_t key(uint32_t node, unsigned char b) { return (uint64_t(node) << 8) | b; }
  std::unordered_map<uint64_t, uint32_t> next_;
  std::vector<int32_t> ends_;
};

class Unigram final : public Model {
 public:
  Unigram(std::vector<std::pair<std::string, double>> pieces, std::optional<int32_t> unk_id, bool byte_fallback)
      : scores_(pieces.size()), unk_id_(unk_id), byte_fallback_(byte_fallback) {
    double min_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < pieces.size(); ++i) {
      vocab_.add(pieces[i].first, int32_t(i));
      scores_[i] = pieces[i].second;
      min_score = std::min(min_score, pieces[i].second);
      // A repeated piece resolves to its last id everywhere, as tokenizers' token_to_ids does.
      trie_.add(pieces[i].first, vocab_.find(pieces[i].first).value());
    }
    unk_score_ = min_score - 10.0;  // sentencepiece's kUnkPenalty
  }
  std::string type() const override { return "Unigram"; }

  void tokenize(const std::string& piece, std::vector<Token>& out) const override {
    uint32_t offset = 0;
    for (const std::string& s : segment(piece)) {
      const uint32_t end = offset + uint32_t(s.size());
      if (auto id = vocab_.find(s)) {
        out.push_back({*id, s, offset, end});
      } else if (!push_bytes(s, offset, end, out)) {
        check(unk_id_.has_value(), "Unigram: \"" + s + "\" is not in the vocabulary and the model has no unk_id");
        out.push_back({*unk_id_, s, offset, end});
      }
      offset = end;
    }
  }

 private:
  // The best segmentation, as strings (an unknown run fused into one).
  std::vector<std::string> segment(const std::string& s) const {
    struct Best {
      double score = 0;
      int64_t start = -1;  // -1: no path ends here yet
      int32_t id = 0;
    };
    std::vector<Best> best(s.size() + 1);
    best[0].start = 0;
    for (size_t from = 0; from < s.size();) {
      const size_t char_len = utf8_length(s, from);
      const double base = best[from].score;
      bool whole_char = false;
      auto offer = [&](size_t to, int32_t id, double score) {
        Best& b = best[to];
        if (b.start < 0 || base + score > b.score) b = {base + score, int64_t(from), id};
      };
      trie_.prefixes(s, from, [&](size_t len, int32_t id) {
        offer(from + len, id, scores_[size_t(id)]);
        if (len == char_len) whole_char = true;
      });
      if (!whole_char) {
        check(unk_id_.has_value(), "Unigram: a character of \"" + s + "\" starts no piece and the model has no unk_id");
        offer(from + char_len, *unk_id_, unk_score_);
      }
      from += char_len;
    }
    std::vector<std::string> pieces;
    std::string unknown_run;  // consecutive unknowns, back to front
    for (size_t end = s.size(); end > 0;) {
      const size_t start = size_t(best[end].start);
      std::string piece = s.substr(start, end - start);
      if (unk_id_ && best[end].id == *unk_id_) {
        unknown_run.insert(0, piece);
      } else {
        if (!unknown_run.empty()) pieces.push_back(std::move(unknown_run)), unknown_run.clear();
        pieces.push_back(std::move(piece));
      }
      end = start;
    }
    if (!unknown_run.empty()) pieces.push_back(std::move(unknown_run));
    return {pieces.rbegin(), pieces.rend()};
  }

  // Byte fallback: every byte of s as its <0xNN> piece, each spanning all of s, when every one
  // of them is in the vocabulary.
  bool push_bytes(const std::string& s, uint32_t start, uint32_t end, std::vector<Token>& out) const {
    if (!byte_fallback_) return false;
    std::vector<Token> bytes;
    for (unsigned char b : s) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto id = vocab_.find(name);
      if (!id) return false;
      bytes.push_back({*id, name, start, end});
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
    return true;
  }

  static size_t utf8_length(const std::string& s, size_t i) {
    size_t j = i;
    next_codepoint(s, j);
    return j - i;
  }

  PieceTrie trie_;
  std::vector<double> scores_;
  double unk_score_ = 0;
  std::optional<int32_t> unk_id_;
  bool byte_fallback_;
};

}  // namespace

std::unique_ptr<Model> make_unigram(const JsonAt& j) {
  JsonAt vocab = j.at("vocab");
  vocab.expect_array();
  std::vector<std::pair<std::string, double>> pieces;
  for (size_t i = 0; i < vocab.value.size(); ++i) {
    JsonAt e = vocab.at(i);
    if (!e.value.is_array() || e.value.size() != 2 || !e.value[0].is_string() || !e.value[1].is_number())
      e.fail("expected [\"piece\", score]");
    pieces.emplace_back(e.value[0].get<std::string>(), e.value[1].get<double>());
  }
  std::optional<int32_t> unk;
  if (j.has("unk_id")) {
    JsonAt u = j.at("unk_id");
    if (!u.value.is_number_integer() || u.value.get<int64_t>() < 0 || u.value.get<int64_t>() >= int64_t(pieces.size()))
      u.fail("expected the index of a piece (0 to " + std::to_string(int64_t(pieces.size()) - 1) + ")");
    unk = int32_t(u.value.get<int64_t>());
  }
  return std::make_unique<Unigram>(std::move(pieces), unk, j.boolean_or("byte_fallback", false));
}

}  // namespace tach::tokenizer
