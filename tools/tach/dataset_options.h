// The options that name a labelled dataset's columns, the same in every command that trains on
// one or reads one for its labels (tach train, tach prune --by importance).
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>

#include "tach/dataset.h"
#include "tach/error.h"

namespace tach::cli {

// --text-column, --text-pair-column, --label-column and --header into `d`.
inline void add_dataset_column_options(CLI::App* sub, DatasetOptions& d) {
  sub->add_option("--text-column", d.text_column, "Text column or key (default text)");
  sub->add_option("--text-pair-column", d.text_pair_column, "Second text column, for sentence pairs");
  sub->add_option("--label-column", d.label_column, "Label column or key (default label)");
  sub->add_option("--header", d.header, "CSV/TSV header: auto, yes, no (default auto)");
}

// --split given (split_flag, e.g. --split or --eval-split) with a local file that has no splits
// (CSV, TSV, JSONL, Parquet, CoNLL: only a JSON split file holds several): a usage error, where
// it would be ignored and the whole file read. Hub datasets (glue/sst2, hf://datasets/...) have splits.
inline void check_split_applies(const DatasetOptions& d, const std::string& split_flag) {
  std::error_code ec;
  if (d.split.empty() || d.path.empty() || !std::filesystem::is_regular_file(d.path, ec)) return;
  std::string format = d.format;
  if (format == "auto") {
    format = std::filesystem::path(d.path).extension().string();
    std::transform(format.begin(), format.end(), format.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (!format.empty()) format.erase(0, 1);
  }
  if (format == "json") return;  // a JSON split file, or its reader says what it lacks
  throw UsageError(split_flag + " " + d.split + ": dataset " + d.path +
                   " is one file of rows with no splits, and would be read whole; " + split_flag +
                   " picks a split of a JSON split file ({\"train\": [...], \"validation\": [...]}) or of a Hub "
                   "dataset (glue/sst2, hf://datasets/ORG/NAME): drop " +
                   split_flag + ", or give the split's own file");
}

}  // namespace tach::cli
