// Timer and ThroughputTracker.
#include <algorithm>
#include <limits>

#include "tach/error.h"
#include "tach/metrics.h"
#include "tach/stats.h"

namespace tach {

SeriesStats::SeriesStats() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  mean = std = min = max = p50 = p95 = p99 = nan;
}

SeriesStats series_stats(const std::vector<double>& v);  // metric_tracker.cc

Timer::Timer(Device device) : device_(usable_metrics_device(device, "Timer")) {}

void Timer::start(const std::string& name) {
  synchronize(device_);
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  running_[name] = now;
}

double Timer::stop(const std::string& name) {
  synchronize(device_);
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(name);
  check(it != running_.end(), "Timer: stop(\"" + name + "\") without a start");
  const double s = std::chrono::duration<double>(now - it->second).count();
  running_.erase(it);
  seconds_[name].push_back(s);
  return s;
}

Timer::Scope::Scope(Timer& timer, std::string name) : timer_(timer), name_(std::move(name)) { timer_.start(name_); }
Timer::Scope::~Scope() { timer_.stop(name_); }

SeriesStats Timer::stats(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = seconds_.find(name);
  return it == seconds_.end() ? SeriesStats{} : series_stats(it->second);
}

std::map<std::string, SeriesStats> Timer::summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, SeriesStats> out;
  for (const auto& [name, v] : seconds_) out[name] = series_stats(v);
  return out;
}

ThroughputTracker::ThroughputTracker(size_t window, double ema_alpha) : window_(window), alpha_(ema_alpha) {
  check(window >= 1, "ThroughputTracker: the window must hold at least 1 update");
  check(ema_alpha > 0 && ema_alpha <= 1, "ThroughputTracker: the EMA alpha must be in (0, 1]");
}

void ThroughputTracker::update(int64_t samples, int64_t tokens) {
  update_at(std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count(), samples, tokens);
}

void ThroughputTracker::update_at(double t, int64_t samples, int64_t tokens) {
  check(samples >= 0 && tokens >= 0, "ThroughputTracker: samples and tokens must be >= 0");
  std::lock_guard<std::mutex> lock(mu_);
  if (!ring_.empty()) {
    const double dt = t - ring_.back().t;
    check(dt >= 0, "ThroughputTracker: time went backwards");
    if (dt > 0) {
      const double s = double(samples) / dt, k = double(tokens) / dt;
      ema_samples_ = ema_started_ ? alpha_ * s + (1 - alpha_) * ema_samples_ : s;
      ema_tokens_ = ema_started_ ? alpha_ * k + (1 - alpha_) * ema_tokens_ : k;
      ema_started_ = true;
    }
  }
  ring_.push_back({t, samples, tokens});
  if (ring_.size() > window_ + 1) ring_.erase(ring_.begin());
  ++updates_;
  total_samples_ += samples;
  total_tokens_ += tokens;
}

ThroughputTracker::Rates ThroughputTracker::rates() const {
  std::lock_guard<std::mutex> lock(mu_);
  Rates r;
  r.updates = updates_;
  r.total_samples = total_samples_;
  r.total_tokens = total_tokens_;
  r.ema_samples_per_s = ema_samples_;
  r.ema_tokens_per_s = ema_tokens_;
  // Work done in the window's updates after the first, over the time they span.
  if (ring_.size() >= 2) {
    const double dt = ring_.back().t - ring_.front().t;
    int64_t s = 0, k = 0;
    for (size_t i = 1; i < ring_.size(); ++i) s += ring_[i].samples, k += ring_[i].tokens;
    if (dt > 0) {
      r.samples_per_s = double(s) / dt;
      r.tokens_per_s = double(k) / dt;
    }
  }
  return r;
}

}  // namespace tach
