// Training data for the per-token heads, prepared as transformers' example scripts prepare it:
//   masked LM             run_mlm.py --line_by_line: each text truncated to max_length, with its
//                         special-tokens mask (the collator masks at batch time, train_data.h)
//   token classification  run_ner.py: the words of each sentence tokenized as pre-split words
//                         (is_split_into_words), their tags aligned to the sub-tokens (token_labels.h)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/conll.h"
#include "tach/dataset.h"
#include "tach/tokenizer.h"
#include "train/train_data.h"

namespace tach::train {

// Where the tokens of a sentence given as words came from.
struct WordEncoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> word_ids;  // the word of each token; -1 for the special tokens
};

// As tokenizers encodes pre-split words: each word on its own (byte-level BPE with a space
// before it, as add_prefix_space does), then the special tokens around them; the words' tokens
// truncated so that the whole fits max_length.
WordEncoding encode_words(const Tokenizer& tokenizer, const std::vector<std::string>& words, int64_t max_length);

// The masked-LM examples: the text column's texts. masking: the collator's settings; seed keys the draws.
TrainData prepare_mlm_data(const Dataset& dataset, const Tokenizer& tokenizer, int64_t max_length,
                           bool pad_to_max_length, int32_t pad_id, bool with_types, const MlmMasking& masking,
                           uint64_t seed);

// The tags of tagged sentences as a new head's labels: the distinct tags sorted (run_ner's get_label_list).
std::vector<std::string> tag_labels(const std::vector<data::TaggedSentence>& sentences);

// Token classification: labels are the head's (id order); a tag not among them is an error that names it.
TrainData prepare_token_data(const std::vector<data::TaggedSentence>& sentences, const std::string& source,
                             const Tokenizer& tokenizer, const std::vector<std::string>& labels, bool label_all_tokens,
                             int64_t max_length, bool pad_to_max_length, int32_t pad_id, bool with_types);

}  // namespace tach::train
