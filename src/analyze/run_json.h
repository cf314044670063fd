// analysis.json's ops[], steps[] and ranks[] (schema tach.analysis/1, docs/formats.md) from a
// run's records.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/op_averages.h"
#include "analyze/run_records.h"

namespace tach::analyze {

// rows: the op table as sorted; peak: the run's ceilings (run_ceilings.h), for peak_fraction.
nlohmann::ordered_json ops_json(const std::vector<OpRow>& rows, GroupBy group_by, const std::optional<PeakFlops>& peak);

nlohmann::ordered_json steps_json(const std::vector<std::pair<std::string, StepRow>>& step_rows);

// top: how many of each rank's kernels are listed, longest first.
nlohmann::ordered_json ranks_json(const std::map<int, RankState>& ranks, size_t top);

}  // namespace tach::analyze
