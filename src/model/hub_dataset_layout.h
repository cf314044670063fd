// How a Hub dataset repository lays out its data, and the names workflows give datasets: which
// files hold a split (of a configuration), and which repository a canonical name now lives in.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tach::model {

// Whether tach reads a file of this name as data: .csv, .tsv, .json, .jsonl, .parquet.
bool is_dataset_data_file(const std::string& path);

// The split a data file holds, by the Hub's conventions: "sst2/validation-00000-of-00001.parquet"
// and "data/validation.csv" hold "validation"; "sst2/validation/0000.parquet" (the Parquet
// export's layout) does too.
std::string split_of_data_file(const std::string& path);

// The data files of `split` under `prefix` ("" for the whole repository, else a configuration's
// folder) among `paths`, sorted (shards in order). With no split given, the only split there is.
// Errors list the splits, or the configurations when files of the split lie in several folders;
// `what` names the dataset in them.
std::vector<std::string> choose_split_files(const std::vector<std::string>& paths, const std::string& prefix,
                                            const std::string& split, const std::string& what);

// A dataset as workflows name it: "glue/sst2" (a canonical name and its configuration), "imdb",
// or "ORG/NAME[/CONFIG]" with allow_org_names, to "hf://datasets/REPO[/CONFIG]". The canonical
// names map to the repositories the Hub moved them to ("glue" is nyu-mll/glue). nullopt when the
// name is none of these.
std::optional<std::string> named_dataset_spec(const std::string& name, bool allow_org_names);

}  // namespace tach::model
