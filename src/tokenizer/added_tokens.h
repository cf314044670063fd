// Added and special tokens: matched in the text before the model sees it, leftmost and then
// longest, honouring single_word, lstrip, rstrip and normalized as tokenizers does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tach::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};

struct Segment {
  size_t start, end;             // byte range in the text searched
  std::optional<int32_t> token;  // an added token, or text for the model
};

// Splits text by the tokens whose `normalized` flag equals `normalized`.
std::vector<Segment> split_added(const std::string& text, const std::vector<AddedToken>& tokens, bool normalized);

}  // namespace tach::tokenizer
