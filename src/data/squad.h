// SQuAD question-answering data: the official files (v1.1: data[].paragraphs[].{context,
// qas[].{id, question, answers[].{text, answer_start}}}; v2.0 adds is_impossible and
// plausible_answers) and the flat layout of Hugging Face datasets (id, title, context, question,
// answers{text[], answer_start[]}) as JSON lists, JSONL or Parquet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/question_answering.h"

namespace tach::data {

using tach::read_squad;
using tach::SquadData;
using tach::SquadQuestion;

// Reads `bytes` of the file `path` as read_squad reads the file.
SquadData parse_squad(const std::string& path, const std::string& bytes);

}  // namespace tach::data
