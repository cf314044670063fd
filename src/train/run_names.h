// How training runs name their directories: a UTC time stamp and the model's last path part.
#pragma once

#include <string>

namespace tach::train {

std::string utc_stamp();  // "20261123-124836"
// The model spec's last part ("all-MiniLM-L6-v2" of a path, "bert-tiny" of "preset:bert-tiny"),
// with characters other than letters, digits, '-', '.', '_' replaced by '-'.
std::string model_name_for_runs(const std::string& model);

}  // namespace tach::train
