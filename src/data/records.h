// A table of string records read from a file, before columns are chosen: the common shape of
// CSV/TSV rows, JSONL objects and JSON split lists.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace tach::data {

struct Records {
  std::vector<std::string> columns;                             // names or "0", "1", ... when there are none
  std::vector<std::vector<std::string>> rows;                   // one value per column ("" when absent)
  std::vector<int64_t> row_numbers;                             // 1-based record number in the file, per row
  std::string split;                                            // JSON split files
  std::vector<std::string> skipped_columns;                     // Parquet: nested columns (lists, structs), not read
  std::vector<std::string> list_columns;                        // Parquet read with lists: cells are JSON arrays
  std::map<std::string, std::vector<std::string>> class_names;  // Parquet from `datasets`: ClassLabel names per column
};

// CSV (RFC 4180: quoted fields, "" escapes, multi-line fields) with `delimiter`; a UTF-8 BOM is
// dropped. Nothing is trimmed. header: "auto" (a header when the first row contains
// header_probe, or, when header_probe is a name rather than a column index, when a field of the
// first row that is not a number heads a column of numbers), "yes" or "no".
Records read_delimited(const std::string& path, const std::string& bytes, char delimiter, const std::string& header,
                       const std::string& header_probe);

// One JSON object per line; columns are the union of keys in order of first appearance.
Records read_jsonl(const std::string& path, const std::string& bytes);

// A Parquet file's flat columns (strings, integers, floats, booleans; plain, dictionary, RLE and
// delta encodings; snappy, gzip, zstd or no compression), nulls as "", and the ClassLabel names
// that `datasets` records in the footer's metadata (of a column, or of a list column's elements).
// With `lists`, also the columns of one list level (list<T>, and lists inside structs: SQuAD's
// answers.text and answers.answer_start, conll2003's tokens and ner_tags), named without the
// list's wrapper groups, each cell a JSON array ("[]" empty, "" null), listed in list_columns.
Records read_parquet(const std::string& path, const std::string& bytes, bool lists = false);

// Row `row` as a JSON object: a dotted column name nests ("answers.text" is {"answers": {"text":
// ...}}), list columns' cells are their arrays (null when empty text), other cells strings.
nlohmann::json record_object(const Records& records, size_t row);

// A JSON object of splits. Each split is a list of [text, label] pairs (CLINC150) or of objects.
Records read_json_splits(const std::string& path, const std::string& bytes, const std::string& split);

}  // namespace tach::data
