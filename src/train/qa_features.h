// Question-answering training features as transformers' run_qa.py prepares them
// (prepare_train_features): the (question, context) pair in windows of max_length tokens
// (truncation only_second, doc_stride context tokens shared by consecutive windows; the question
// left-stripped), and in each window the first answer's start and end token positions, or the
// CLS token's index for both when the answer is not wholly inside the window (or there is none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/squad.h"
#include "tach/tokenizer.h"
#include "train/train_data.h"

namespace tach::train {

struct AnswerPositions {
  int32_t start = 0, end = 0;
};

// One window: offsets are bytes of the context for its tokens (sequence id 1); answer: the
// answer's bytes [first, second) in the context, none for a question without one.
AnswerPositions answer_positions(const Encoding& window, int32_t cls_index,
                                 const std::optional<std::pair<size_t, size_t>>& answer);

// The bytes [first, second) of `text` (answer_start characters in, as Python counts them) in context.
std::pair<size_t, size_t> answer_bytes(const std::string& context, int64_t answer_start, const std::string& text);

// Every question's windows, one training row each.
TrainData prepare_qa_data(const std::vector<data::SquadQuestion>& questions, const Tokenizer& tokenizer,
                          int64_t max_length, int64_t doc_stride, bool pad_to_max_length, int32_t pad_id,
                          bool with_types);

}  // namespace tach::train
