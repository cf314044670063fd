// read_dataset: picks the reader from the format, then the text and label columns.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "data/dataset_kind.h"
#include "data/records.h"
#include "tach/dataset.h"
#include "model/hub.h"
#include "model/hub_dataset_layout.h"
#include "tach/error.h"

namespace tach {

namespace {

std::string read_file(const std::string& path) {
  std::error_code ec;
  check(std::filesystem::is_regular_file(path, ec), "dataset " + path + ": not found (or not a file)");
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), "dataset " + path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string detect_format(const std::string& path, const std::string& format) {
  if (format != "auto") {
    check(format != "conll",
          "--dataset-format conll reads tagged words (CoNLL text), which a token classifier reads; this reads rows of "
          "a text and a label, as a sequence classifier does: --dataset-format auto, csv, tsv, jsonl, json or parquet "
          "(CoNLL text is read by tach eval -m with a token-classification model, and by tach train --task "
          "token-classification)");
    check(format == "csv" || format == "tsv" || format == "jsonl" || format == "json" || format == "parquet",
          "dataset format '" + format + "' is not one of auto, csv, tsv, jsonl, json, parquet");
    return format;
  }
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".csv") return "csv";
  if (ext == ".tsv" || ext == ".tab") return "tsv";
  if (ext == ".jsonl" || ext == ".ndjson") return "jsonl";
  if (ext == ".json") return "json";
  if (ext == ".parquet" || ext == ".pq") return "parquet";
  throw Error("dataset " + path + ": cannot tell the format from the extension '" + ext +
              "'; say it with --dataset-format csv|tsv|jsonl|json|parquet (CoNLL text is a token classifier's data: "
              "tach eval -m with a token-classification model, tach train --task token-classification)");
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + ("'" + n + "'");
  return s;
}

size_t column_index(const data::Records& r, const std::string& name, const std::string& role, const std::string& path) {
  for (size_t i = 0; i < r.columns.size(); ++i)
    if (r.columns[i] == name) return i;
  throw Error(
      "dataset " + path + ": no " + role + " column '" + name + "'; the columns are " + joined(r.columns) +
      (r.skipped_columns.empty() ? std::string() : " (nested columns, not read: " + joined(r.skipped_columns) + ")") +
      " (choose with --" + role + "-column; files without a header number their columns from 0)");
}

// The file's records by its format.
data::Records read_records(const std::string& path, const std::string& format, const DatasetOptions& options) {
  const std::string bytes = read_file(path);
  if (format == "csv" || format == "tsv")
    return data::read_delimited(path, bytes, format == "csv" ? ',' : '\t', options.header, options.text_column);
  if (format == "jsonl") return data::read_jsonl(path, bytes);
  if (format == "parquet") return data::read_parquet(path, bytes);
  return data::read_json_splits(path, bytes, options.split);
}

// What options.path names, read: a local file; or a Hub dataset (hf://datasets/..., or a name
// such as glue/sst2) whose split may be several shards, read in order as one table. `shown` is
// how errors and reports name it.
data::Records load(const DatasetOptions& options, std::string& shown, std::string& format) {
  check(!options.path.empty(), "no dataset path given");
  std::error_code ec;
  const auto spec =
      std::filesystem::exists(options.path, ec) ? std::nullopt : model::named_dataset_spec(options.path, false);
  if (!spec) {
    shown = options.path;
    format = detect_format(options.path, options.format);
    return read_records(options.path, format, options);
  }
  const std::vector<std::string> files =
      model::hub_dataset_files(*spec, options.split, model::HubSettings::from_environment());
  shown = options.path + (options.path == *spec ? "" : " (" + *spec + ")") +
          (files.size() == 1 ? " (" + files.front() + ")" : " (" + std::to_string(files.size()) + " files)");
  data::Records all;
  for (const auto& f : files) {
    format = detect_format(f, options.format);
    data::Records r = read_records(f, format, options);
    check(all.columns.empty() || r.columns == all.columns,
          "dataset " + f + ": its columns differ from the split's first file's");
    const int64_t before = int64_t(all.rows.size());
    if (all.columns.empty()) all = std::move(r);
    else {
      for (auto& row : r.rows) all.rows.push_back(std::move(row));
      for (int64_t n : r.row_numbers) all.row_numbers.push_back(before + n);
    }
  }
  return all;
}

}  // namespace

DatasetTable read_dataset_table(const DatasetOptions& options) {
  DatasetTable t;
  data::Records r = load(options, t.path, t.format);
  t.split = r.split;
  t.columns = std::move(r.columns);
  t.skipped_columns = std::move(r.skipped_columns);
  t.rows = std::move(r.rows);
  t.class_names = std::move(r.class_names);
  return t;
}

namespace {

Dataset read_text_rows(const DatasetOptions& options) {
  Dataset d;
  data::Records r = load(options, d.path, d.format);
  d.split = r.split;
  d.columns = r.columns;
  const std::string where = d.path + (r.split.empty() ? "" : " (split '" + r.split + "')");
  check(!r.rows.empty(), "dataset " + where + " is empty: no records to read");

  // JSON [text, label] pairs have no names: the text is first, the label second.
  const bool pairs = d.format == "json" && r.columns == std::vector<std::string>{"0", "1"};
  const size_t text_col = pairs ? 0 : column_index(r, options.text_column, "text", d.path);
  const bool has_label = pairs || !options.label_column.empty();  // texts only (tach embed) when empty
  const size_t label_col = pairs ? 1 : has_label ? column_index(r, options.label_column, "label", d.path) : 0;
  const bool has_pair = !options.text_pair_column.empty();
  const size_t pair_col = has_pair ? column_index(r, options.text_pair_column, "text-pair", options.path) : 0;
  if (has_label && !pairs)
    if (const auto it = r.class_names.find(r.columns[label_col]); it != r.class_names.end()) d.label_names = it->second;
  d.examples.reserve(r.rows.size());
  for (size_t i = 0; i < r.rows.size(); ++i) {
    auto& row = r.rows[i];
    Example e{std::move(row[text_col]), has_pair ? std::move(row[pair_col]) : std::string(),
              has_label ? std::move(row[label_col]) : std::string(), r.row_numbers[i]};
    check(!has_label || !e.label.empty(), "dataset " + where + ": record " + std::to_string(e.source_row) +
                                              " has no label in column '" + r.columns[label_col] + "'");
    d.examples.push_back(std::move(e));
  }
  return d;
}

}  // namespace

Dataset read_dataset(const DatasetOptions& options) {
  try {
    return read_text_rows(options);
  } catch (const Error&) {
    // Another task's data (a SQuAD file, tagged words): say so, rather than the reader's complaint
    // (a SQuAD file's top-level keys are no splits; a .conll extension is no table format).
    const data::DatasetKind kind = data::guess_dataset_kind(options.path);
    // A table's own complaint stands; --dataset-format conll's names its flag.
    if (kind == data::DatasetKind::unknown || kind == data::DatasetKind::table || options.format == "conll") throw;
    const std::string task = data::dataset_kind_task(kind);
    throw Error(data::other_task_data_message("dataset " + options.path, kind,
                                              options.label_column.empty()
                                                  ? "rows of a text (CSV, TSV, JSONL, JSON splits or Parquet)"
                                                  : "rows of a text and a label (CSV, TSV, JSONL, JSON splits or "
                                                    "Parquet) as a sequence classifier reads them",
                                              data::dataset_kind_reader(kind) + " reads it in tach eval (-m with a " +
                                                  task + " model) and tach train (--task " + task + ")"));
  }
}

void shuffle_examples(std::vector<Example>& examples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Fisher-Yates with our own index draw: std::shuffle's sequence is implementation-defined.
  for (size_t i = examples.size(); i > 1; --i) std::swap(examples[i - 1], examples[rng() % i]);
}

}  // namespace tach
