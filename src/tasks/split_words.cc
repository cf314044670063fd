#include "tasks/split_words.h"

#include <algorithm>

#include "model/family.h"
#include "tach/error.h"

namespace tach::tasks {

bool run_ner_adds_prefix_space(const std::string& model_type) {
  // examples/pytorch/token-classification/run_ner.py's rule, held by the family rows.
  return model::model_family(model_type).words_take_prefix_space;
}

WordSplitter::WordSplitter(const Tokenizer& tokenizer, bool add_prefix_space, const std::string& probe_word)
    : tokenizer_(tokenizer), add_prefix_space_(add_prefix_space) {
  const Encoding e = tokenizer.encode(add_prefix_space ? " " + probe_word : probe_word, true);
  size_t b = 0, a = e.ids.size();
  while (b < a && e.special_tokens_mask[b]) ++b;
  while (a > b && e.special_tokens_mask[a - 1]) --a;
  check(a > b, "the tokenizer gives no tokens for the word '" + probe_word + "'");
  before_.assign(e.ids.begin(), e.ids.begin() + long(b));
  before_types_.assign(e.type_ids.begin(), e.type_ids.begin() + long(b));
  after_.assign(e.ids.begin() + long(a), e.ids.end());
  after_types_.assign(e.type_ids.begin() + long(a), e.type_ids.end());
  content_type_ = e.type_ids[b];
}

WordTokens WordSplitter::split(const std::vector<std::string>& words, int64_t max_length) const {
  WordTokens s;
  s.ids = before_;
  s.type_ids = before_types_;
  s.word_ids.assign(before_.size(), -1);
  const int64_t frame = int64_t(before_.size() + after_.size());
  const size_t budget = max_length > 0 ? size_t(std::max<int64_t>(0, max_length - frame)) : SIZE_MAX;
  size_t content = 0;
  for (size_t w = 0; w < words.size(); ++w) {
    // ByteLevel's add_prefix_space adds the space only to a word that does not begin with one
    const bool prefix = add_prefix_space_ && (words[w].empty() || words[w][0] != ' ');
    const Encoding e = tokenizer_.encode(prefix ? " " + words[w] : words[w], false);
    if (e.ids.empty() || content >= budget) {
      s.first_token.push_back(-1);
      continue;
    }
    s.first_token.push_back(int64_t(s.ids.size()));
    for (size_t k = 0; k < e.ids.size() && content < budget; ++k, ++content) {
      s.ids.push_back(e.ids[k]);
      s.type_ids.push_back(content_type_);
      s.word_ids.push_back(int32_t(w));
    }
  }
  s.ids.insert(s.ids.end(), after_.begin(), after_.end());
  s.type_ids.insert(s.type_ids.end(), after_types_.begin(), after_types_.end());
  s.word_ids.insert(s.word_ids.end(), after_.size(), -1);
  return s;
}

}  // namespace tach::tasks
