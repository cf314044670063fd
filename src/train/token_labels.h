// Word labels onto sub-tokens, as transformers' run_ner.py aligns them
// (tokenize_and_align_labels): a special token gets -100; the first sub-token of each word gets
// the word's label; the word's later sub-tokens get -100, or with label_all_tokens the word's
// label with a B- tag turned into its I- tag where the label list has one (b_to_i_label).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::train {

// For each label id, the id of its I- form (B-PER -> I-PER) when the list has one, else itself.
std::vector<int32_t> b_to_i_labels(const std::vector<std::string>& labels);

// word_ids [T]: the word each token came from, -1 for a special token or padding.
// word_labels: a label id per word. b_to_i: b_to_i_labels(labels). Returns labels [T].
std::vector<int32_t> align_word_labels(const std::vector<int32_t>& word_ids, const std::vector<int32_t>& word_labels,
                                       bool label_all_tokens, const std::vector<int32_t>& b_to_i);

}  // namespace tach::train
