// Extractive question answering with a model: the question and context in windows
// (answer_windows), each window's start and end logits from the model's question-answering head,
// the answers from those (answers_from_logits). What tach answer and tach eval run.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/question_answering.h"
#include "tach/tokenizer.h"
#include "tasks/answer_spans.h"

namespace tach {

// answer_questions with its forward given: `token_logits` gives each batch of windows its start and
// end logits, [B, T, 2] f32 on the host (tach's model, or another engine fed the same ids), and
// `info` describes the model (its head, positions, padding and token types).
std::vector<std::vector<Answer>> answer_questions(const ModelInfo& info,
                                                  const std::function<Tensor(const TokenBatch&)>& token_logits,
                                                  const Tokenizer& tokenizer, const std::vector<Question>& questions,
                                                  const AnswerOptions& options, size_t batch_windows = 8);

}  // namespace tach

namespace tach::tasks {

// The token whose position stays a candidate (the empty answer): the tokenizer's CLS token, the
// special token its post-processor puts first ([CLS], <s>), else one of those by name, else nullopt.
std::optional<int32_t> cls_token_id(const Tokenizer& tokenizer);

using tach::answer_questions;
using tach::Question;

}  // namespace tach::tasks
