// The Pareto frontier of accuracy against a cost (latency or memory): which variants are worth
// having, and what each other one loses to.
#include <cmath>

#include "tach/shrink.h"

namespace tach {

namespace {

// b dominates a: at least as accurate and at most as costly, strictly better in one of the two;
// costs within their noises of each other are equal.
bool dominates(const ParetoPoint& b, const ParetoPoint& a) {
  const double noise = a.cost_noise + b.cost_noise;
  const bool cheaper = b.cost < a.cost - noise, same_cost = std::fabs(b.cost - a.cost) <= noise;
  return b.accuracy >= a.accuracy && (cheaper || same_cost) && (b.accuracy > a.accuracy || cheaper);
}

}  // namespace

double latency_noise_ms(const PointResult& row) {
  const Distribution& d = row.batch_latency_ms;
  return 0.01 * d.median + (d.n > 1 ? 1.2533 * d.std / std::sqrt(double(d.n)) : 0);
}

// n variants: O(n^2) comparisons, a handful of variants each.
std::vector<ParetoVerdict> pareto_frontier(const std::vector<ParetoPoint>& points) {
  std::vector<ParetoVerdict> out;
  out.reserve(points.size());
  for (const ParetoPoint& a : points) {
    ParetoVerdict v;
    v.name = a.name;
    for (const ParetoPoint& b : points)
      if (&b != &a && dominates(b, a)) v.dominated_by.push_back(b.name);
    v.on_frontier = v.dominated_by.empty();
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace tach
