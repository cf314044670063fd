// tach analyze's terminal report of one run: notes, the op table, the roofline, the steps, GPU
// time per rank, memory peaks and the findings.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "analyze/op_averages.h"
#include "analyze/roofline.h"
#include "analyze/run_records.h"

namespace tach::analyze {

// run: its ops sorted as analysis["sort_by"] says; analysis: the run's analysis.json (notes,
// sort_by, roofline, ranks and findings are read from it); peak: the run's ceilings; top: rows
// per table.
std::string run_text(const RunRecords& run, const nlohmann::ordered_json& analysis,
                     const std::optional<PeakFlops>& peak, GroupBy group_by, size_t top);

}  // namespace tach::analyze
