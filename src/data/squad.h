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

// Refuses a --dataset-format that is no SQuAD layout (SQuAD data is read by its content: auto,
// json, jsonl or parquet): "conll" names the token classifier that reads tagged words, csv/tsv the
// sequence classifier that reads tables; `fix_for` says how the command reads them ("--task" for
// tach train: "--task token-classification"; empty: -m with a model of that task).
void check_squad_format(const std::string& format, const std::string& fix_for);

}  // namespace tach::data
