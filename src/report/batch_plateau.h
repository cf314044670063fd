// Where a batch series' throughput stops growing, and why: tach bench's plateau finding.
#pragma once

#include <vector>

#include "tach/report.h"

namespace tach::report {

// ok: one series' finished points (any order); others: the same series' points that did not run
// (a larger batch that ran out of memory ends the series for memory). Sets f's plateau fields.
//
// The rule: with the points sorted by batch, the gain per doubling from batch b to the next
// measured batch b' is (throughput(b') / throughput(b))^(1 / log2(b' / b)) - 1; the plateau is
// the first b whose gain is below kPlateauGainPerDoubling. None: it still grows at the largest
// batch (or, where larger batches ran out of memory, the largest that ran is the plateau).
void find_plateau(BatchFinding& f, std::vector<const PointResult*> ok, const std::vector<const PointResult*>& others,
                  const DeviceLimitsLookup& limits);

}  // namespace tach::report
