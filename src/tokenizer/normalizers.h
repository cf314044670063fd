// Normalizers: BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend,
// Precompiled (precompiled.h), Sequence (tokenizers' names and semantics).
#pragma once

#include <memory>

#include "tokenizer/json_util.h"
#include "tokenizer/normalized.h"

namespace tach::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& s) const = 0;
};

// Null JSON gives nullptr (no normalizer). Unknown types are an error listing the known ones.
std::unique_ptr<Normalizer> make_normalizer(const JsonAt& j);

}  // namespace tach::tokenizer
