#include "tokenizer/models.h"

#include <algorithm>
#include <queue>

#include "tokenizer/unicode.h"

namespace tach::tokenizer {

void Vocab::add(const std::string& token, int32_t id) {
  check(id >= 0, "vocabulary id " + std::to_string(id) + " for \"" + token + "\" is negative");
  by_token_[token] = id;
  if (size_t(id) >= by_id_.size()) {
    by_id_.resize(size_t(id) + 1);
    present_.resize(size_t(id) + 1, false);
  }
  by_id_[size_t(id)] = token;
  present_[size_t(id)] = true;
}

std::optional<int32_t> Vocab::find(const std::string& token) const {
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return std::nullopt;
  return it->second;
}

const std::string* Vocab::token(int32_t id) const {
  return id >= 0 && size_t(id) < by_id_.size() && present_[size_t(id)] ? &by_id_[size_t(id)] : nullptr;
}

namespace {

// Byte offsets of each code point of s, plus s.size() at the end.
std::vector<uint32_t> char_starts(const std::string& s) {
  std::vector<uint32_t> v;
  for (size_t i = 0; i < s.size();) {
    v.push_back(uint32_t(i));
    next_codepoint(s, i);
  }
  v.push_back(uint32_t(s.size()));
  return v;
}

class WordPiece final : public Model {
 public:
  WordPiece(std::string unk, std::string prefix, size_t max_chars)
      : unk_(std::move(unk)), prefix_(std::move(prefix)), max_chars_(max_chars) {}
  std::string type() const override { return "WordPiece"; }

  void tokenize(const std::string& piece, std::vector<Token>& out) const override {
    const std::vector<uint32_t> cs = char_starts(piece);
    const size_t nchars = cs.size() - 1;
    if (nchars > max_chars_) return push_unk(piece, out);
    const size_t first = out.size();
    size_t start = 0;
    while (start < nchars) {
      size_t end = nchars;
      bool found = false;
      while (start < end) {
        std::string sub = piece.substr(cs[start], cs[end] - cs[start]);
        if (start > 0) sub = prefix_ + sub;
        if (auto id = vocab_.find(sub)) {
          out.push_back({*id, std::move(sub), cs[start], cs[end]});
          found = true;
          break;
        }
        --end;
      }
      if (!found) {
        out.resize(first);
        return push_unk(piece, out);
      }
      start = end;
    }
  }

 private:
  void push_unk(const std::string& piece, std::vector<Token>& out) const {
    auto id = vocab_.find(unk_);
    check(id.has_value(), "WordPiece: the unknown token \"" + unk_ + "\" is not in the vocabulary");
    out.push_back({*id, unk_, 0, uint32_t(piece.size())});
  }
  std::string unk_, prefix_;
  size_t max_chars_;
};

class Bpe final : public Model {
 public:
  struct Options {
    std::optional<std::string> unk;
    std::string prefix, suffix;
    bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  };
  explicit Bpe(Options o) : opt_(std::move(o)) {}
  std::string type() const override { return "BPE"; }

  void add_merge(const std::string& a, const std::string& b, const std::string& where) {
    // The merged token drops the right part's continuing-subword prefix, as tokenizers does.
    const std::string merged = a + b.substr(std::min(opt_.prefix.size(), b.size()));
    auto ia = vocab_.find(a), ib = vocab_.find(b), in = vocab_.find(merged);
    if (!ia || !ib) throw Error(where + ": merge \"" + a + " " + b + "\" uses a token that is not in the vocabulary");
    if (!in) throw Error(where + ": merge \"" + a + " " + b + "\" makes a token that is not in the vocabulary");
    const uint64_t key = (uint64_t(uint32_t(*ia)) << 32) | uint32_t(*ib);
    merges_.emplace(key, std::make_pair(int32_t(merges_.size()), *in));
  }

  void tokenize(const std::string& piece, std::vector<Token>& out) const override {
    if (piece.empty()) return;
    if (opt_.ignore_merges)
      if (auto id = vocab_.find(piece)) {
        out.push_back({*id, piece, 0, uint32_t(piece.size())});
        return;
      }
    // Symbols: a doubly linked list over the word, one per code point to start with.
    struct Symbol {
      int32_t id;
      int prev, next;
      uint32_t start, end;
    };
    std::vector<Symbol> sym;
    const std::vector<uint32_t> cs = char_starts(piece);
    const size_t n = cs.size() - 1;
    for (size_t i = 0; i < n; ++i) {
      std::string s = piece.substr(cs[i], cs[i + 1] - cs[i]);
      if (i > 0) s = opt_.prefix + s;
      if (i + 1 == n) s += opt_.suffix;
      if (auto id = vocab_.find(s)) {
        sym.push_back({*id, int(sym.size()) - 1, -1, cs[i], cs[i + 1]});
      } else if (opt_.byte_fallback && all_bytes_known(piece, cs[i], cs[i + 1])) {
        for (uint32_t b = cs[i]; b < cs[i + 1]; ++b)
          sym.push_back({*vocab_.find(byte_token(uint8_t(piece[b]))), int(sym.size()) - 1, -1, b, b + 1});
      } else if (opt_.unk) {
        auto unk = vocab_.find(*opt_.unk);
        check(unk.has_value(), "BPE: the unknown token \"" + *opt_.unk + "\" is not in the vocabulary");
        if (opt_.fuse_unk && !sym.empty() && sym.back().id == *unk) sym.back().end = cs[i + 1];
        else sym.push_back({*unk, int(sym.size()) - 1, -1, cs[i], cs[i + 1]});
      }
      // Without unk or byte fallback an unknown character is dropped, as tokenizers does.
    }
    for (size_t i = 0; i < sym.size(); ++i) {
      sym[i].prev = int(i) - 1;
      sym[i].next = i + 1 < sym.size() ? int(i + 1) : -1;
    }
    // Lowest rank first, leftmost among equals.
    struct Candidate {
      int32_t rank;
      int pos;
      int32_t new_id;
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    auto consider = [&](int pos) {
      const int next = sym[size_t(pos)].next;
      if (next < 0) return;
      auto it = merges_.find((uint64_t(uint32_t(sym[size_t(pos)].id)) << 32) | uint32_t(sym[size_t(next)].id));
      if (it != merges_.end()) queue.push({it->second.first, pos, it->second.second});
    };
    for (size_t i = 0; i + 1 < sym.size(); ++i) consider(int(i));
    std::vector<bool> dead(sym.size(), false);
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& left = sym[size_t(top.pos)];
      if (dead[size_t(top.pos)] || left.next < 0) continue;
      Symbol& right = sym[size_t(left.next)];
      auto it = merges_.find((uint64_t(uint32_t(left.id)) << 32) | uint32_t(right.id));
      if (it == merges_.end() || it->second.second != top.new_id) continue;  // stale candidate
      left.id = top.new_id;
      left.end = right.end;
      dead[size_t(left.next)] = true;
      left.next = right.next;
      if (right.next >= 0) sym[size_t(right.next)].prev = top.pos;
      if (left.prev >= 0) consider(left.prev);
      consider(top.pos);
    }
    for (size_t i = 0; i < sym.size(); ++i)
      if (!dead[i]) out.push_back({sym[i].id, *vocab_.token(sym[i].id), sym[i].start, sym[i].end});
  }

 private:
  static std::string byte_token(uint8_t b) {
    static const char* hex = "0123456789ABCDEF";
    return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
  }
  bool all_bytes_known(const std::string& piece, uint32_t a, uint32_t b) const {
    for (uint32_t i = a; i < b; ++i)
      if (!vocab_.find(byte_token(uint8_t(piece[i])))) return false;
    return true;
  }
  Options opt_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left, right) → (rank, merged id)
};

class WordLevel final : public Model {
 public:
  explicit WordLevel(std::string unk) : unk_(std::move(unk)) {}
  std::string type() const override { return "WordLevel"; }
  void tokenize(const std::string& piece, std::vector<Token>& out) const override {
    if (auto id = vocab_.find(piece)) {
      out.push_back({*id, piece, 0, uint32_t(piece.size())});
      return;
    }
    auto unk = vocab_.find(unk_);
    check(unk.has_value(),
          "WordLevel: \"" + piece + "\" is not in the vocabulary and the unknown token \"" + unk_ + "\" is not either");
    out.push_back({*unk, unk_, 0, uint32_t(piece.size())});
  }

 private:
  std::string unk_;
};

void read_vocab(const JsonAt& j, Vocab& vocab) {
  JsonAt v = j.at("vocab");
  if (!v.value.is_object()) v.fail("expected an object {\"token\": id, ...}");
  for (auto it = v.value.begin(); it != v.value.end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
      JsonAt{*it, v.file, v.path + "[\"" + it.key() + "\"]"}.fail("expected a non-negative integer id");
    vocab.add(it.key(), int32_t(it->get<int64_t>()));
  }
}

}  // namespace

std::unique_ptr<Model> make_wordpiece(Vocab vocab, std::string unk, std::string prefix, size_t max_chars) {
  auto m = std::make_unique<WordPiece>(std::move(unk), std::move(prefix), max_chars);
  m->vocab() = std::move(vocab);
  return m;
}

std::unique_ptr<Model> make_bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const std::string& where) {
  auto m = std::make_unique<Bpe>(Bpe::Options{});
  m->vocab() = std::move(vocab);
  for (size_t i = 0; i < merges.size(); ++i)
    m->add_merge(merges[i].first, merges[i].second, where + ": merge " + std::to_string(i + 1));
  return m;
}

std::unique_ptr<Model> make_model(const JsonAt& j) {
  if (!j.value.is_object()) j.fail("expected a model object");
  // tokenizers omits "type" for some BPE files; infer it from the fields as it does.
  const std::string type = j.has("type") ? j.type() : (j.has("merges") ? "BPE" : j.has("vocab") ? "WordPiece" : "");
  if (type == "WordPiece") {
    auto m = std::make_unique<WordPiece>(j.str_or("unk_token", "[UNK]"), j.str_or("continuing_subword_prefix", "##"),
                                         size_t(j.integer_or("max_input_chars_per_word", 100)));
    read_vocab(j, m->vocab());
    return m;
  }
  if (type == "BPE") {
    if (j.has("dropout")) j.at("dropout").fail("BPE dropout must be null: tach tokenizes deterministically");
    Bpe::Options o;
    if (j.has("unk_token")) o.unk = j.str("unk_token");
    o.prefix = j.str_or("continuing_subword_prefix", "");
    o.suffix = j.str_or("end_of_word_suffix", "");
    o.fuse_unk = j.boolean_or("fuse_unk", false);
    o.byte_fallback = j.boolean_or("byte_fallback", false);
    o.ignore_merges = j.boolean_or("ignore_merges", false);
    auto m = std::make_unique<Bpe>(o);
    read_vocab(j, m->vocab());
    JsonAt merges = j.at("merges");
    merges.expect_array();
    for (size_t i = 0; i < merges.value.size(); ++i) {
      JsonAt e = merges.at(i);
      std::string a, b;
      if (e.value.is_string()) {
        const std::string s = e.value.get<std::string>();
        const auto sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == s.size() || s.find(' ', sp + 1) != std::string::npos)
          e.fail("expected \"a b\" or [\"a\", \"b\"]");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (e.value.is_array() && e.value.size() == 2 && e.value[0].is_string() && e.value[1].is_string()) {
        a = e.value[0].get<std::string>();
        b = e.value[1].get<std::string>();
      } else {
        e.fail("expected \"a b\" or [\"a\", \"b\"]");
      }
      m->add_merge(a, b, e.file + ": " + e.path);
    }
    return m;
  }
  if (type == "WordLevel") {
    auto m = std::make_unique<WordLevel>(j.str_or("unk_token", "[UNK]"));
    read_vocab(j, m->vocab());
    return m;
  }
  if (type == "Unigram") return make_unigram(j);
  j.fail("model type \"" + type + "\" is not supported (supported: BPE, WordPiece, WordLevel, Unigram)");
}

}  // namespace tach::tokenizer
