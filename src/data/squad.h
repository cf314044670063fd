// SQuAD question-answering data: the official files (v1.1: data[].paragraphs[].{context,
// qas[].{id, question, answers[].{text, answer_start}}}; v2.0 adds is_impossible and
// plausible_answers) and the flat layout of Hugging Face datasets (id, title, context, question,
// answers{text[], answer_start[]}) as JSON lists or JSONL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::data {

struct SquadQuestion {
  std::string id;
  std::string title;
  std::string context;
  std::string question;
  std::vector<std::string> answers;    // gold texts; empty for a question without an answer (v2)
  std::vector<int64_t> answer_starts;  // characters (code points) into the context, one per answer
  std::string where;                   // "data[0].paragraphs[2].qas[1]" or "record 7", for messages
};

struct SquadData {
  std::vector<SquadQuestion> questions;
  // v2.0: the file says so (version "v2.0", is_impossible fields) or, in the flat layout, a
  // question has no answer. v1.1 data must give every question an answer found in its context.
  bool v2 = false;
  std::string layout;  // "SQuAD v1.1 JSON", "SQuAD v2.0 JSON", "flat JSON", "flat JSONL"
};

// Reads `bytes` of the file `path`. Errors name the file and the record: not JSON, a missing or
// mistyped field, answers and answer_start of different lengths, and in v1.1 data a question
// without an answer or an answer whose text is not at its answer_start in the context.
SquadData parse_squad(const std::string& path, const std::string& bytes);
SquadData read_squad(const std::string& path);

}  // namespace tach::data
