// Extractive question answering with a model: the question and context in windows
// (answer_windows), each window's start and end logits from the model's question-answering head,
// the answers from those (answers_from_logits). What tach answer and tach eval run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/tokenizer.h"
#include "tasks/answer_spans.h"

namespace tach::tasks {

// The token whose position stays a candidate (the empty answer): the tokenizer's CLS token, the
// special token its post-processor puts first ([CLS], <s>), else one of those by name, else nullopt.
std::optional<int32_t> cls_token_id(const Tokenizer& tokenizer);

struct Question {
  std::string question;
  std::string context;
};

// The answers to each question (best first, at most options.top_k), as transformers'
// question-answering pipeline gives them. Windows of several questions share batches of up to
// `batch_windows` rows. Errors: a model without a question-answering head, a window longer than
// the model's positions, and answer_windows' errors.
std::vector<std::vector<Answer>> answer_questions(const Model& model, const Tokenizer& tokenizer,
                                                  const std::vector<Question>& questions, const AnswerOptions& options,
                                                  size_t batch_windows = 8);

}  // namespace tach::tasks
