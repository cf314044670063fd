// What kind of task data a file holds, guessed from its first bytes: said when a model's task
// cannot read it ("this file looks like CoNLL text"), so that the error names the mismatch rather
// than the parser's first complaint. Only a hint for messages: nothing is read by it.
#pragma once

#include <string>

namespace tach::data {

enum class DatasetKind {
  unknown,
  squad,        // SQuAD: {"data": [{"paragraphs": ...}]} or records with question and context
  tagged_json,  // JSON / JSONL records with a "tokens" list (token classification)
  conll,        // CoNLL text: whitespace-separated columns, blank lines between sentences
  table,        // a .csv or .tsv file that is not CoNLL text: a sequence classifier's texts and labels
};

// Reads at most the first 64 KiB of `path`; unknown where it cannot be read or is none of these.
DatasetKind guess_dataset_kind(const std::string& path);

// "SQuAD data", "JSON records with tokens and tags", "CoNLL text", "a table (csv rows)" ("" for unknown).
std::string dataset_kind_name(DatasetKind kind, const std::string& path = "");

// The task that reads `kind`, as --task and --head name it: "question-answering",
// "token-classification", "sequence-classification" ("" for unknown).
std::string dataset_kind_task(DatasetKind kind);

// The model that reads `kind`: "a question-answering model", "a token classifier", "a sequence
// classifier" ("" for unknown).
std::string dataset_kind_reader(DatasetKind kind);

// One error for a file of another task's data: what was found, what was expected and the fix.
// "PATH: this file is CoNLL text, which a token classifier reads, not <expected>; <fix>"
std::string other_task_data_message(const std::string& path, DatasetKind found, const std::string& expected,
                                    const std::string& fix);

}  // namespace tach::data
