// The statistics behind tach compare's verdicts, made to hold on a machine whose speed drifts
// while it runs. A point's runs are not independent draws: on a shared machine the other jobs come
// and go, and a run's latencies wander with them for seconds at a time. Resampling them one by one
// (an i.i.d. bootstrap) then gives an interval far narrower than the run-to-run spread, and two
// runs of one build are called "improved". So the samples are cut, in the order they were
// measured, into blocks; the interval resamples whole blocks (the non-overlapping block bootstrap,
// Carlstein 1986 / Kuensch 1989), and a change must also exceed the drift seen inside either run
// (how far its blocks' medians moved apart while it ran): a change smaller than that could be the
// same drift going on between the runs. Points measured under contention, or under loads that
// differ (the points' "load" records), are not judged at all.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tach/bench.h"

namespace tach::report {

// samples, in measurement order, cut into k contiguous blocks of near-equal size, k = n / 6
// clamped to [2, 8] (a block of about six runs or more; at most n blocks): few enough that a
// block's median is steady under plain noise, enough to see a drift. n < 2: one block.
std::vector<std::vector<double>> time_blocks(const std::vector<double>& samples);

// How far the run's level moved while it ran: its largest block median over its smallest, - 1
// (0.12: one stretch of the run was 12% slower than another). 0 with fewer than 2 samples.
double within_run_drift(const std::vector<double>& samples);
// Whether a change (new / baseline - 1) is no larger than a drift, as ratios either way (a
// halving, -50%, is as large as a doubling, +100%).
bool within_drift(double change, double drift);

struct RatioInterval {
  double change = 0, lo = 0, hi = 0;  // median(now) / median(base) - 1, and its percentile interval
};

// The change in the median from base to now, with a percentile interval from `resamples` draws of
// each side's time blocks with replacement (each draw: as many blocks as the side has, their
// samples pooled, the median taken).
RatioInterval block_bootstrap_ratio(const std::vector<double>& base, const std::vector<double>& now, double confidence,
                                    int resamples, std::mt19937_64& rng);

// Whether the load two points were measured under lets their change be judged, from their
// "load" records. A contended point (other processes took cores its threads needed) measured the
// shared machine as much as the model: against an uncontended one the two were measured under
// different load, and against another contended one the change may be the other processes'
// (the same cores taken can still be different work: a build's memory traffic, a test's spin), so
// either way the change is inconclusive. Uncontended on both sides is not enough either: what
// runs on the cores a point left free still shares its caches, its memory bandwidth and its clock
// (and on a VM a "core" may be half of a physical one), so one run beside a busy job and one on a
// quiet machine differ by tens of percent. So the load is a difference too where the two sides'
// other-process use (mean, or highest sub-window) differs by more than kLoadDifferenceCores, or
// where it moved by more than that while either side was measured (highest sub-window over the
// mean): a load that came and went during a run met some of its runs and not others. A point
// without a record (an older run) has an unknown load: never a difference by itself.
inline constexpr double kLoadDifferenceCores = 0.25;  // as the contention rule's slack: noise and the odd daemon
struct LoadCheck {
  bool known = false;         // both points carry a load record
  bool inconclusive = false;  // a side was contended, or the two loads (or one while it ran) differed
  std::string why;            // in words, with both sides' figures, when inconclusive
};
LoadCheck load_check(const PointResult& baseline, const PointResult& now);

}  // namespace tach::report
