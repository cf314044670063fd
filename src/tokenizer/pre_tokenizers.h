// Pre-tokenizers: BertPreTokenizer, Whitespace, WhitespaceSplit, Punctuation, Digits, Split
// (every behaviour, and invert), ByteLevel, Metaspace, Sequence.
#pragma once

#include <memory>
#include <vector>

#include "tokenizer/json_util.h"
#include "tokenizer/normalized.h"

namespace tach::tokenizer {

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

struct Match {
  size_t start, end;
  bool is_match;
};

// Cuts s into pieces as tokenizers' NormalizedString::split does: `matches` cover s in order;
// the behaviour decides what happens to the matched parts. Empty pieces are dropped.
void split_by(const NormalizedString& s, const std::vector<Match>& matches, SplitBehavior behavior,
              std::vector<NormalizedString>& out);

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece by the pieces it splits into.
  virtual void split(std::vector<NormalizedString>& pieces) const = 0;
};

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonAt& j);

}  // namespace tach::tokenizer
