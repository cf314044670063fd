#include "train/token_labels.h"

#include <algorithm>

#include "tach/error.h"
#include "train/loss.h"

namespace tach::train {

std::vector<int32_t> b_to_i_labels(const std::vector<std::string>& labels) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& l = labels[i];
    int32_t to = int32_t(i);
    if (l.rfind("B-", 0) == 0) {
      const auto it = std::find(labels.begin(), labels.end(), "I-" + l.substr(2));
      if (it != labels.end()) to = int32_t(it - labels.begin());
    }
    out.push_back(to);
  }
  return out;
}

std::vector<int32_t> align_word_labels(const std::vector<int32_t>& word_ids, const std::vector<int32_t>& word_labels,
                                       bool label_all_tokens, const std::vector<int32_t>& b_to_i) {
  std::vector<int32_t> out;
  out.reserve(word_ids.size());
  int32_t previous = -1;
  for (const int32_t w : word_ids) {
    if (w < 0) {
      out.push_back(kIgnoreIndex);
    } else {
      check(size_t(w) < word_labels.size(), "a token of word " + std::to_string(w) + " but only " +
                                                std::to_string(word_labels.size()) + " words have labels");
      const int32_t label = word_labels[size_t(w)];
      if (w != previous) out.push_back(label);
      else out.push_back(label_all_tokens ? b_to_i.at(size_t(label)) : kIgnoreIndex);
    }
    previous = w;
  }
  return out;
}

}  // namespace tach::train
