// The options that name a labelled dataset's columns, the same in every command that trains on
// one or reads one for its labels (tach train, tach prune --by importance).
#pragma once

#include <CLI/CLI.hpp>

#include "tach/dataset.h"

namespace tach::cli {

// --text-column, --text-pair-column, --label-column and --header into `d`.
inline void add_dataset_column_options(CLI::App* sub, DatasetOptions& d) {
  sub->add_option("--text-column", d.text_column, "Text column or key (default text)");
  sub->add_option("--text-pair-column", d.text_pair_column, "Second text column, for sentence pairs");
  sub->add_option("--label-column", d.label_column, "Label column or key (default label)");
  sub->add_option("--header", d.header, "CSV/TSV header: auto, yes, no (default auto)");
}

}  // namespace tach::cli
