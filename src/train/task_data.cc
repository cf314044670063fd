#include "train/task_data.h"

#include <map>
#include <set>

#include "tach/error.h"
#include "tasks/split_words.h"
#include "train/token_labels.h"

namespace tach::train {

TrainData prepare_mlm_data(const Dataset& dataset, const Tokenizer& tokenizer, int64_t max_length,
                           bool pad_to_max_length, int32_t pad_id, bool with_types, const MlmMasking& masking,
                           uint64_t seed) {
  validate_mlm_masking(masking);
  check(max_length >= 2, "--max-length must be at least 2, got " + std::to_string(max_length));
  TrainData d;
  d.head = Head::masked_lm;
  d.max_length = max_length;
  d.pad_to_max_length = pad_to_max_length;
  d.pad_id = pad_id;
  d.with_types = with_types;
  d.masking = masking;
  d.mask_seed = seed;
  EncodeOptions eo;
  Truncation tr;
  tr.max_length = size_t(max_length);
  eo.truncation = tr;
  for (const Example& e : dataset.examples) {
    // run_mlm --line_by_line skips empty lines.
    if (e.text.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    const Encoding enc = tokenizer.encode(e.text, eo);
    d.ids.push_back(enc.ids);
    d.types.push_back(with_types ? enc.type_ids : std::vector<int32_t>{});
    d.special.push_back(enc.special_tokens_mask);
  }
  check(!d.ids.empty(), dataset.path + ": no text to train the masked LM on");
  return d;
}

std::vector<std::string> tag_labels(const std::vector<data::TaggedSentence>& sentences) {
  std::set<std::string> distinct;
  for (const auto& s : sentences) distinct.insert(s.tags.begin(), s.tags.end());
  return {distinct.begin(), distinct.end()};
}

TrainData prepare_token_data(const std::vector<data::TaggedSentence>& sentences, const std::string& source,
                             const Tokenizer& tokenizer, bool add_prefix_space, const std::vector<std::string>& labels,
                             bool label_all_tokens, int64_t max_length, bool pad_to_max_length, int32_t pad_id,
                             bool with_types) {
  check(!sentences.empty(), source + ": no tagged sentences");
  TrainData d;
  d.head = Head::token_classification;
  d.max_length = max_length;
  d.pad_to_max_length = pad_to_max_length;
  d.pad_id = pad_id;
  d.with_types = with_types;
  d.num_labels = int64_t(labels.size());
  std::map<std::string, int32_t> id_of;
  for (size_t i = 0; i < labels.size(); ++i) id_of[labels[i]] = int32_t(i);
  const std::vector<int32_t> b_to_i = b_to_i_labels(labels);
  const tasks::WordSplitter splitter(tokenizer, add_prefix_space);
  check(max_length > splitter.frame_size(),
        "--max-length " + std::to_string(max_length) + " leaves no room beside the special tokens");
  for (const auto& s : sentences) {
    std::vector<int32_t> word_labels;
    for (const auto& tag : s.tags) {
      const auto it = id_of.find(tag);
      if (it == id_of.end()) {
        std::string list;
        for (const auto& l : labels) list += (list.empty() ? "" : ", ") + l;
        throw Error(source + ": sentence at " + std::to_string(s.source) + ": tag \"" + tag +
                    "\" is not one of the head's labels (" + list + ")");
      }
      word_labels.push_back(it->second);
    }
    const tasks::WordTokens w = splitter.split(s.words, max_length);
    d.ids.push_back(w.ids);
    d.types.push_back(with_types ? w.type_ids : std::vector<int32_t>{});
    d.token_labels.push_back(align_word_labels(w.word_ids, word_labels, label_all_tokens, b_to_i));
  }
  return d;
}

}  // namespace tach::train
