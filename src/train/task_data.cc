#include "train/task_data.h"

#include <map>
#include <set>

#include "tach/error.h"
#include "train/token_labels.h"

namespace tach::train {

namespace {

// The special tokens a single sequence gets before and after its own tokens.
void special_frame(const Tokenizer& tokenizer, std::vector<int32_t>* before, std::vector<int32_t>* after) {
  const Encoding e = tokenizer.encode("a", true);
  size_t first = 0, last = e.size();
  while (first < e.size() && e.special_tokens_mask[first]) ++first;
  while (last > first && e.special_tokens_mask[last - 1]) --last;
  before->assign(e.ids.begin(), e.ids.begin() + long(first));
  after->assign(e.ids.begin() + long(last), e.ids.end());
}

}  // namespace

WordEncoding encode_words(const Tokenizer& tokenizer, const std::vector<std::string>& words, int64_t max_length) {
  std::vector<int32_t> before, after;
  special_frame(tokenizer, &before, &after);
  const int64_t room = max_length - int64_t(before.size() + after.size());
  check(room >= 1, "--max-length " + std::to_string(max_length) + " leaves no room beside the special tokens");
  // Byte-level BPE marks a word's start with its space: pre-split words get one each (add_prefix_space).
  const bool prefix_space = tokenizer.describe().find("ByteLevel") != std::string::npos;
  WordEncoding w;
  w.ids = before;
  w.word_ids.assign(before.size(), -1);
  for (size_t i = 0; i < words.size() && int64_t(w.ids.size() - before.size()) < room; ++i) {
    const Encoding e = tokenizer.encode(prefix_space ? " " + words[i] : words[i], false);
    for (size_t k = 0; k < e.size() && int64_t(w.ids.size() - before.size()) < room; ++k) {
      w.ids.push_back(e.ids[k]);
      w.word_ids.push_back(int32_t(i));
    }
  }
  w.ids.insert(w.ids.end(), after.begin(), after.end());
  w.word_ids.resize(w.ids.size(), -1);
  return w;
}

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
                             const Tokenizer& tokenizer, const std::vector<std::string>& labels, bool label_all_tokens,
                             int64_t max_length, bool pad_to_max_length, int32_t pad_id, bool with_types) {
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
    const WordEncoding w = encode_words(tokenizer, s.words, max_length);
    d.ids.push_back(w.ids);
    d.types.push_back(with_types ? std::vector<int32_t>(w.ids.size(), 0) : std::vector<int32_t>{});
    d.token_labels.push_back(align_word_labels(w.word_ids, word_labels, label_all_tokens, b_to_i));
  }
  return d;
}

}  // namespace tach::train
