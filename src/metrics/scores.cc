// ScoreDistributionTracker and GrpoTracker.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tach/error.h"
#include "tach/metrics.h"

namespace tach {

void ScoreDistributionTracker::update(std::optional<double> score) {
  std::lock_guard<std::mutex> lock(mu_);
  ++s_.total;
  if (!score || !std::isfinite(*score)) {
    ++s_.invalid;
  } else {
    ++s_.valid;
    ++s_.counts[*score];
    sum_ += *score;
  }
}

ScoreDistributionTracker::Summary ScoreDistributionTracker::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  Summary s = s_;
  s.invalid_rate = s.total ? double(s.invalid) / double(s.total) : 0;
  s.mean = s.valid ? sum_ / double(s.valid) : std::numeric_limits<double>::quiet_NaN();
  return s;
}

void GrpoTracker::log_step(int64_t step, double policy_loss, double mean_reward, double kl,
                           const std::map<std::string, double>& reward_components) {
  steps_.update("policy_loss", policy_loss, step);
  steps_.update("mean_reward", mean_reward, step);
  steps_.update("kl", kl, step);
  for (const auto& [name, v] : reward_components) steps_.update("reward/" + name, v, step);
}

void GrpoTracker::log_group(int64_t, const std::vector<double>& rewards) {
  check(!rewards.empty(), "GrpoTracker: a group needs at least one reward");
  for (double r : rewards) check(std::isfinite(r), "GrpoTracker: a group reward is NaN or infinite");
  std::lock_guard<std::mutex> lock(mu_);
  groups_.push_back(rewards);
}

GrpoTracker::GroupStats GrpoTracker::group_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  GroupStats g;
  g.groups = int64_t(groups_.size());
  if (groups_.empty()) return g;
  size_t largest = 0;
  for (const auto& r : groups_) largest = std::max(largest, r.size());
  std::vector<double> rank_sum(largest, 0);
  std::vector<int64_t> rank_n(largest, 0);
  double all = 0, std_sum = 0, spread = 0;
  int64_t n_all = 0, flat = 0;
  for (auto r : groups_) {
    double mean = 0;
    for (double x : r) mean += x;
    mean /= double(r.size());
    double m2 = 0;
    for (double x : r) m2 += (x - mean) * (x - mean);
    std_sum += r.size() > 1 ? std::sqrt(m2 / double(r.size() - 1)) : 0;
    const auto [lo, hi] = std::minmax_element(r.begin(), r.end());
    spread += *hi - *lo;
    flat += *hi == *lo;
    for (double x : r) all += x, ++n_all;
    std::sort(r.rbegin(), r.rend());
    for (size_t i = 0; i < r.size(); ++i) rank_sum[i] += r[i], ++rank_n[i];
  }
  g.mean_reward = all / double(n_all);
  g.mean_group_std = std_sum / double(groups_.size());
  g.zero_variance_fraction = double(flat) / double(groups_.size());
  g.mean_best_minus_worst = spread / double(groups_.size());
  for (size_t i = 0; i < largest; ++i) g.mean_reward_by_rank.push_back(rank_sum[i] / double(rank_n[i]));
  return g;
}

}  // namespace tach
