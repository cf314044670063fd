// Extractive question answering with a model: the question and context in windows
// (answer_windows), each window's start and end logits from the model's question-answering head,
// the answers from those (answers_from_logits). What tach answer and tach eval run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tach/model.h"
#include "tach/question_answering.h"
#include "tach/tokenizer.h"
#include "tasks/answer_spans.h"

namespace tach::tasks {

// The token whose position stays a candidate (the empty answer): the tokenizer's CLS token, the
// special token its post-processor puts first ([CLS], <s>), else one of those by name, else nullopt.
std::optional<int32_t> cls_token_id(const Tokenizer& tokenizer);

using tach::answer_questions;
using tach::Question;

}  // namespace tach::tasks
