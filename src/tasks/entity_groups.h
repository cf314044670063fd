// What a token classifier's logits become for a user, as transformers' token-classification
// ("ner") pipeline gives them: each token's label and softmax score (aggregation_strategy="none"),
// and entity groups (aggregation_strategy="simple"): adjacent tokens of one entity type joined,
// a B- tag starting a new group, with the mean score, the words joined as the tokenizer joins
// tokens, and character offsets into the text. Tokens and groups labelled 'O' are what the
// pipeline leaves out (ignore_labels).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tach/tokenizer.h"

namespace tach::tasks {

// One token's prediction (the pipeline's entity with aggregation "none").
struct TokenEntity {
  std::string entity;  // the label of the highest score (id2label)
  float score = 0;     // its softmax probability, in f32 as numpy computes it
  int64_t index = 0;   // the token's position in the encoded text, special tokens counted
  std::string word;    // the token as the vocabulary writes it ("##ing"); the text's own piece for [UNK]
  int64_t start = 0;   // character (code point) offsets into the text, [start, end)
  int64_t end = 0;
};

// An entity group (aggregation "simple").
struct EntityGroup {
  std::string entity_group;  // the first token's label without its B-/I- prefix
  float score = 0;           // the mean of the tokens' scores
  std::string word;          // the tokens joined by the tokenizer's decoder
  int64_t start = 0, end = 0;
};

// Tokens joined into text as the tokenizer's decoder joins them (transformers'
// convert_tokens_to_string).
using TokensToString = std::function<std::string(const std::vector<std::string>&)>;

// text: what was encoded; encoding: its tokens (ids, tokens, byte offsets, special-token mask) [T];
// logits: [T, labels.size()] f32, the classifier's row for this text. Special tokens are left
// out; every other token is returned, 'O' included, in order. unk_id: the tokenizer's unknown
// token, whose word is the text it stands for.
std::vector<TokenEntity> token_entities(const std::string& text, const Encoding& encoding, const float* logits,
                                        const std::vector<std::string>& labels, std::optional<int32_t> unk_id);

// The pipeline's group_entities over every token entity ('O' included): a token joins the group
// before it when it has the same type and is not a B- tag.
std::vector<EntityGroup> group_entities(const std::vector<TokenEntity>& tokens, const TokensToString& join);

// The pipeline's output: tokens or groups not labelled 'O'.
std::vector<TokenEntity> without_outside(const std::vector<TokenEntity>& tokens);
std::vector<EntityGroup> without_outside(const std::vector<EntityGroup>& groups);

}  // namespace tach::tasks
