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

// The masked-LM examples: the text column's texts. masking: the collator's settings; seed keys the draws.
TrainData prepare_mlm_data(const Dataset& dataset, const Tokenizer& tokenizer, int64_t max_length,
                           bool pad_to_max_length, int32_t pad_id, bool with_types, const MlmMasking& masking,
                           uint64_t seed);

// The tags of tagged sentences as a new head's labels: the distinct tags sorted (run_ner's get_label_list).
std::vector<std::string> tag_labels(const std::vector<data::TaggedSentence>& sentences);

// Token classification: labels are the head's (id order); a tag not among them is an error that names it.
// The words split as transformers' is_split_into_words=True (tasks::WordSplitter), each with a
// space before it when add_prefix_space (tasks::run_ner_adds_prefix_space: run_ner's rule).
TrainData prepare_token_data(const std::vector<data::TaggedSentence>& sentences, const std::string& source,
                             const Tokenizer& tokenizer, bool add_prefix_space, const std::vector<std::string>& labels,
                             bool label_all_tokens, int64_t max_length, bool pad_to_max_length, int32_t pad_id,
                             bool with_types);

}  // namespace tach::train
