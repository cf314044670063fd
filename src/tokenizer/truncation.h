// Truncation and padding of encodings, with tokenizers' exact rules (utils/truncation.rs,
// utils/padding.rs, Encoding::truncate and Encoding::pad).
#pragma once

#include "tach/tokenizer.h"

namespace tach::tokenizer {

// Cuts e to max_len tokens; what is cut becomes overflowing windows of max_len tokens that
// overlap by stride. stride must be < max_len.
void truncate(Encoding& e, size_t max_len, size_t stride, Side direction);
// a (and b for pairs) before post-processing; max_length already excludes the special tokens.
void truncate_encodings(Encoding& a, Encoding* b, const Truncation& t, size_t max_length);
void pad(Encoding& e, size_t target, const Padding& p);
size_t padded_length(size_t length, const Padding& p);

}  // namespace tach::tokenizer
