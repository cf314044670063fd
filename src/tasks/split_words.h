// Words to sub-tokens as transformers tokenizes pre-split words (is_split_into_words=True): each
// word through the tokenizer on its own, the words' tokens in order, framed by the special tokens
// the post-processor puts around one text, truncated to a length with the frame kept. What
// run_ner and tach eval on a token classifier feed the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/tokenizer.h"

namespace tach::tasks {

struct WordTokens {
  std::vector<int32_t> ids, type_ids;  // [T]
  std::vector<int32_t> word_ids;       // [T]: the word each token came from, -1 for special tokens
  // Per word: the position of its first sub-token, -1 when it has none (the truncation cut it, or
  // the word gave no tokens); the word's label goes there, as run_ner aligns labels.
  std::vector<int64_t> first_token;
};

// run_ner's rule for add_prefix_space (byte-level BPE models whose words need the space before
// them to be tokenized as inside a text): true for the model types it names.
bool run_ner_adds_prefix_space(const std::string& model_type);

class WordSplitter {
 public:
  // probe_word: any word the tokenizer gives a token for; encoding it with special tokens shows
  // the frame. add_prefix_space: each word is tokenized with a space before it, as transformers'
  // add_prefix_space=True makes a byte-level BPE tokenizer do.
  WordSplitter(const Tokenizer& tokenizer, bool add_prefix_space, const std::string& probe_word = "a");
  // max_length: tokens in all, the frame included (0: no limit).
  WordTokens split(const std::vector<std::string>& words, int64_t max_length) const;
  // The special tokens around the words (a max_length must leave room beside them).
  int64_t frame_size() const { return int64_t(before_.size() + after_.size()); }

 private:
  const Tokenizer& tokenizer_;
  bool add_prefix_space_;
  std::vector<int32_t> before_, after_, before_types_, after_types_;
  int32_t content_type_ = 0;
};

}  // namespace tach::tasks
