// Tokenizer models: WordPiece, BPE, WordLevel and Unigram (unigram.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_util.h"

namespace tach::tokenizer {

struct Token {
  int32_t id;
  std::string value;
  uint32_t start, end;  // byte range in the piece the model was given
};

class Vocab {
 public:
  void add(const std::string& token, int32_t id);
  std::optional<int32_t> find(const std::string& token) const;
  const std::string* token(int32_t id) const;
  size_t size() const { return by_token_.size(); }
  int32_t max_id() const { return int32_t(by_id_.size()) - 1; }

 private:
  std::unordered_map<std::string, int32_t> by_token_;
  std::vector<std::string> by_id_;
  std::vector<bool> present_;
};

class Model {
 public:
  virtual ~Model() = default;
  // piece: one pre-token (UTF-8); appends its tokens.
  virtual void tokenize(const std::string& piece, std::vector<Token>& out) const = 0;
  const Vocab& vocab() const { return vocab_; }
  Vocab& vocab() { return vocab_; }
  virtual std::string type() const = 0;

 protected:
  Vocab vocab_;
};

std::unique_ptr<Model> make_model(const JsonAt& j);
std::unique_ptr<Model> make_unigram(const JsonAt& j);  // {"type": "Unigram", "vocab": [[piece, score], ...], ...}

// Parts for the legacy loaders (vocab.txt; vocab.json + merges.txt).
std::unique_ptr<Model> make_wordpiece(Vocab vocab, std::string unk, std::string prefix, size_t max_chars);
std::unique_ptr<Model> make_bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const std::string& where);

}  // namespace tach::tokenizer
