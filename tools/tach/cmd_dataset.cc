// tach dataset PATH: what tach reads from a dataset file (CSV, TSV, JSONL, JSON splits, Parquet,
// hf://datasets/...): its format, columns, rows and label names, as a summary or every row as JSONL.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "tach/dataset.h"
#include "tach/error.h"

namespace tach::cli {

namespace {

struct DatasetCommandOptions {
  DatasetOptions data;
  bool jsonl = false;
  size_t head = 5;
};

int run_dataset(const DatasetCommandOptions& opt) {
  const DatasetTable t = read_dataset_table(opt.data);
  if (opt.jsonl) {  // every row, one JSON object of strings per line, keys in column order
    for (const auto& row : t.rows) {
      nlohmann::ordered_json j = nlohmann::ordered_json::object();
      for (size_t c = 0; c < t.columns.size(); ++c) j[t.columns[c]] = c < row.size() ? row[c] : std::string();
      std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    return 0;
  }
  std::cout << "dataset: " << t.path << "\nformat: " << t.format << (t.split.empty() ? "" : ", split " + t.split)
            << "\nrows: " << t.rows.size() << "\ncolumns:";
  for (const auto& c : t.columns) std::cout << " " << c;
  std::cout << "\n";
  if (!t.skipped_columns.empty()) {
    std::cout << "not read (nested: lists and structs):";
    for (const auto& c : t.skipped_columns) std::cout << " " << c;
    std::cout << "\n";
  }
  for (const auto& [column, names] : t.class_names) {
    std::cout << "label names of '" << column << "' (id order, from the file's features):";
    for (size_t i = 0; i < names.size(); ++i) std::cout << " " << i << "=" << names[i];
    std::cout << "\n";
  }
  for (size_t r = 0; r < t.rows.size() && r < opt.head; ++r) {
    std::cout << "row " << r + 1 << ":";
    for (size_t c = 0; c < t.columns.size(); ++c) {
      std::string v = c < t.rows[r].size() ? t.rows[r][c] : "";
      if (v.size() > 60) v = v.substr(0, 57) + "...";
      std::cout << " " << t.columns[c] << "="
                << nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

Command add_dataset_command(CLI::App& app) {
  auto opt = std::make_shared<DatasetCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "dataset",
      "Show what tach reads from a dataset (a CSV, TSV, JSONL, JSON or Parquet file, or hf://datasets/ORG/NAME...): "
      "its format, columns, rows, the label names its features give, and the first rows; --jsonl prints every row");
  sub->add_option("path", opt->data.path, "The dataset file, or hf://datasets/ORG/NAME[@REV][/PATH]")->required();
  sub->add_option("--dataset-format", opt->data.format, "auto (from the extension), csv, tsv, jsonl, json, parquet");
  sub->add_option("--split", opt->data.split, "The split to read (JSON split files; Hub datasets)");
  sub->add_option("--header", opt->data.header, "CSV/TSV: auto, yes or no");
  sub->add_option("--head", opt->head, "How many rows to show (default 5)");
  sub->add_flag("--jsonl", opt->jsonl,
                "Print every row as a JSON object of strings (null cells are \"\"), nothing else");
  return {sub, [opt] { return run_dataset(*opt); }};
}

}  // namespace tach::cli
