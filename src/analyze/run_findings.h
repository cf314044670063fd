// A run's findings: the diagnosis rules (diagnosis.h) over the run's figures, and the stragglers
// among its ranks.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/op_averages.h"
#include "analyze/roofline.h"
#include "analyze/run_records.h"

namespace tach::analyze {

// ops: the run's op table; roofline: analysis.json's roofline (with ops[]) or null; peak: the
// run's ceilings. Returns the findings as strings, never empty.
nlohmann::ordered_json run_findings(const RunRecords& run, const std::vector<OpRow>& ops,
                                    const nlohmann::ordered_json& roofline, const std::optional<PeakFlops>& peak);

}  // namespace tach::analyze
