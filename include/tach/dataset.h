// Labelled text datasets: CSV, TSV, JSONL, Parquet, and JSON split files (CLINC150's data_full.json,
// Hugging Face-style {"split": [{...}, ...]}), and the map from their labels to a model's ids.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tach {

struct DatasetOptions {
  std::string path;
  // auto (from the extension: .csv, .tsv, .jsonl, .json, .parquet) | csv | tsv | jsonl | json | parquet
  std::string format = "auto";
  // Columns (CSV/TSV header names, or 0-based indices for files without a header) or keys
  // (JSONL objects). A JSON split of [text, label] pairs takes 0 and 1 whatever is given.
  std::string text_column = "text";
  std::string text_pair_column;        // optional second text (sentence pairs)
  std::string label_column = "label";  // empty: texts only, no label read (tach embed)
  std::string split;                   // JSON split files: the split to read; default "test" when it exists
  // CSV/TSV: auto (a header when the first row names the text column, or, the text column being
  // asked for by name, when the first row has a name over a column of numbers) | yes | no
  std::string header = "auto";
};

struct Example {
  std::string text;
  std::string text_pair;
  std::string label;   // as written in the file
  int64_t source_row;  // 1-based record number in the file (a CSV record may span lines)
};

struct Dataset {
  std::string path;
  std::string format;                // as detected
  std::string split;                 // JSON splits only
  std::vector<std::string> columns;  // what the file offers (header names, indices or keys)
  std::vector<Example> examples;
  // The label column's class names in id order, where the file says them (a Parquet file written
  // by `datasets` with a ClassLabel feature); its labels are then the ids 0..n-1.
  std::vector<std::string> label_names;
};

// Every column of a dataset file as text, before columns are chosen (tach dataset shows it).
struct DatasetTable {
  std::string path, format, split;
  std::vector<std::string> columns;
  std::vector<std::string> skipped_columns;                     // Parquet's nested columns (lists, structs): not read
  std::vector<std::vector<std::string>> rows;                   // one cell per column; "" for a null or absent value
  std::map<std::string, std::vector<std::string>> class_names;  // ClassLabel names per column (Parquet)
};
DatasetTable read_dataset_table(const DatasetOptions& options);

// Reads every example. Errors name the file, the record and what is wrong: a missing column
// lists the columns there are; an empty dataset is an error.
Dataset read_dataset(const DatasetOptions& options);

// Labels as a model names them (id2label, id order). A dataset label maps to an id by name,
// or as an integer id in range. Unknown labels are an error that lists them (with counts) and
// the model's labels.
class LabelMap {
 public:
  explicit LabelMap(std::vector<std::string> model_labels);
  // One id per example, in order.
  std::vector<int32_t> ids_of(const std::vector<Example>& examples, const std::string& dataset_name) const;
  // Multi-label datasets: each example's label is a set (split_label_set); its ids, in order.
  std::vector<std::vector<int32_t>> label_sets_of(const std::vector<Example>& examples,
                                                  const std::string& dataset_name) const;
  const std::vector<std::string>& labels() const { return labels_; }

 private:
  int32_t id_of(const std::string& label) const;  // -1 when unknown
  [[noreturn]] void throw_unknown(const std::map<std::string, int64_t>& unknown, const std::string& dataset_name) const;
  std::vector<std::string> labels_;
  std::map<std::string, int32_t> by_name_;
};

// A multi-label cell: a JSON list (["sports", "politics"], [0, 3]; JSON and JSONL files hold it
// as a list) or names separated by commas ("sports, politics"); empty or [] is the empty set.
// `where` names the record in errors.
std::vector<std::string> split_label_set(const std::string& cell, const std::string& where);

// A deterministic shuffle (seeded), so that prefixes of any length are fair samples: CLINC150's
// splits are sorted by intent, and its first 100 rows hold one label.
void shuffle_examples(std::vector<Example>& examples, uint64_t seed);

}  // namespace tach
