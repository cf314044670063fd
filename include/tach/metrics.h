// Metrics a training or serving program keeps about itself: named timers, windowed throughput,
// metric trackers with windowed or O(1) streaming statistics, score distributions, GRPO
// metrics, and a logger that streams JSONL and exports JSON (formats in docs/formats.md).
// Every class here is thread-safe: each guards its state with its own mutex.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tach/device.h"

namespace tach {

// Statistics of a series. count = 0 (an empty series or window) leaves every other field NaN.
struct SeriesStats {
  int64_t count = 0;
  double mean, std, min, max, p50, p95, p99;  // std with n - 1
  SeriesStats();
};

// The device a metrics class measures when none is named: CUDA device 0 where one is usable,
// else the CPU. `why` (when given) gets which, and why, in a line a user can read.
Device default_metrics_device(std::string* why = nullptr);
// `requested` where a metrics class can measure it: the CPU, or a CUDA device that is usable now.
// Anything else is an error at construction naming `who`, the device, the reason, and what to
// pass instead (not a CUDA error at the first reading).
Device usable_metrics_device(Device requested, const std::string& who);

// Named timers. stop() returns seconds; on a CUDA device the device is synchronised before each
// clock reading, so that the time is the work's, not its launch's.
class Timer {
 public:
  explicit Timer(Device device = Device::cpu());
  void start(const std::string& name);
  double stop(const std::string& name);  // an error when `name` was not started
  // RAII: start at construction, stop at destruction.
  class Scope {
   public:
    Scope(Timer& timer, std::string name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Timer& timer_;
    std::string name_;
  };
  Scope scope(const std::string& name) { return Scope(*this, name); }
  SeriesStats stats(const std::string& name) const;  // seconds
  std::map<std::string, SeriesStats> summary() const;

 private:
  Device device_;
  mutable std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> running_;
  std::map<std::string, std::vector<double>> seconds_;
};

// Samples and tokens per second: over the last `window` updates, and as an exponential moving
// average of per-update rates (alpha). Time is measured between updates on the steady clock.
class ThroughputTracker {
 public:
  explicit ThroughputTracker(size_t window = 100, double ema_alpha = 0.1);
  void update(int64_t samples, int64_t tokens = 0);
  struct Rates {
    double samples_per_s = 0, tokens_per_s = 0;  // over the window (0 before two updates)
    double ema_samples_per_s = 0, ema_tokens_per_s = 0;
    int64_t updates = 0, total_samples = 0, total_tokens = 0;
  };
  Rates rates() const;
  // For tests and replays: an update at an explicit time (seconds on any monotone clock).
  void update_at(double t_seconds, int64_t samples, int64_t tokens);

 private:
  size_t window_;
  double alpha_;
  mutable std::mutex mu_;
  struct Entry {
    double t;
    int64_t samples, tokens;
  };
  std::vector<Entry> ring_;  // the last window_ + 1 updates
  double ema_samples_ = 0, ema_tokens_ = 0;
  bool ema_started_ = false;
  int64_t updates_ = 0, total_samples_ = 0, total_tokens_ = 0;
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
};

// Named metric series. exact mode keeps every value (windows of the last N possible);
// streaming mode keeps O(1) memory per metric: Welford moments, min/max, and a relative-error
// quantile sketch (DDSketch-style log buckets, 1% relative accuracy by default).
// NaN and infinite values are rejected: counted in `rejected`, never in the statistics.
class MetricTracker {
 public:
  enum class Mode { exact, streaming };
  explicit MetricTracker(Mode mode = Mode::exact, double sketch_relative_accuracy = 0.01);
  ~MetricTracker();
  void update(const std::string& name, double value, int64_t step = -1);
  void update_batch(const std::map<std::string, double>& values, int64_t step = -1);
  SeriesStats stats(const std::string& name) const;  // everything so far; count 0 for an unknown name
  // The last n values (all of them when fewer); exact mode only (an error in streaming mode).
  SeriesStats window_stats(const std::string& name, size_t n) const;
  int64_t rejected(const std::string& name) const;
  std::vector<std::string> names() const;
  // exact mode: (step, value) in order of arrival; streaming mode: empty.
  std::vector<std::pair<int64_t, double>> history(const std::string& name) const;
  Mode mode() const { return mode_; }

 private:
  struct Series;
  Mode mode_;
  double accuracy_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Series>> series_;
};

// Scores where some are missing or invalid (a reward model that failed, a parse error):
// nullopt and NaN are invalid.
class ScoreDistributionTracker {
 public:
  void update(std::optional<double> score);
  struct Summary {
    int64_t total = 0, valid = 0, invalid = 0;
    double invalid_rate = 0;           // invalid / total (0 when total is 0)
    double mean = 0;                   // of valid scores (NaN when none)
    std::map<double, int64_t> counts;  // per distinct valid value
  };
  Summary summary() const;

 private:
  mutable std::mutex mu_;
  Summary s_;
  double sum_ = 0;
};

// GRPO training metrics: per step policy loss, mean reward, reward components and KL; and per
// group of completions for one prompt, the reward distribution and rank statistics.
class GrpoTracker {
 public:
  void log_step(int64_t step, double policy_loss, double mean_reward, double kl,
                const std::map<std::string, double>& reward_components = {});
  void log_group(int64_t step, const std::vector<double>& rewards);
  struct GroupStats {
    int64_t groups = 0;
    double mean_reward = 0, mean_group_std = 0;  // std within a group (n - 1), averaged over groups
    double zero_variance_fraction = 0;           // groups whose rewards are all equal: no GRPO signal
    double mean_best_minus_worst = 0;
    std::vector<double> mean_reward_by_rank;  // rank 0 = the best completion of each group
  };
  GroupStats group_stats() const;
  const MetricTracker& steps() const { return steps_; }

 private:
  MetricTracker steps_;
  mutable std::mutex mu_;
  std::vector<std::vector<double>> groups_;
};

// Logs steps to a JSONL file as they come (one object per line, flushed), keeps them for
// export_all(), and snapshots the metrics at checkpoints.
class TensorBoardWriter;

class TrainingLogger {
 public:
  // jsonl_path may be empty: keep in memory only. append: continue an existing file (a resumed
  // run) instead of starting it afresh.
  explicit TrainingLogger(std::string jsonl_path = "", bool append = false);
  void log_step(int64_t step, const std::map<std::string, double>& metrics,
                const std::vector<std::optional<double>>& scores = {});
  // Every step's metrics also go to `writer` (not owned; nullptr stops), tagged by group:
  // eval_X as eval/X, memory_X and rss_bytes under memory/, the rest under train/.
  void mirror_to(TensorBoardWriter* writer) { tensorboard_ = writer; }
  void save_checkpoint_metrics(const std::string& name);  // stats of every metric now, under `name`
  std::string export_all() const;                         // JSON, schema tach.training_log/1
  void export_all(const std::string& path) const;
  const MetricTracker& metrics() const { return metrics_; }

 private:
  std::string jsonl_path_;
  TensorBoardWriter* tensorboard_ = nullptr;
  MetricTracker metrics_;
  ScoreDistributionTracker scores_;
  mutable std::mutex mu_;
  std::vector<std::string> step_lines_;
  std::vector<std::pair<std::string, std::string>> checkpoints_;  // name, JSON of stats
};

// TensorBoard event files: `tensorboard --logdir DIR` (or `wandb sync --sync-tensorboard DIR`)
// reads them. Scalars are stored as 32-bit floats, as TensorBoard's simple_value holds them;
// the run's JSONL logs keep the doubles. Each writer starts a new file
// (events.out.tfevents.<unix seconds>.<host>.<pid>.tach) and appends records as they come, flushed
// after each, so a killed process leaves every finished record readable.
class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  void scalar(const std::string& tag, double value, int64_t step);
  void text(const std::string& tag, const std::string& markdown, int64_t step);
  // A resumed run: TensorBoard drops the points at or after `step` that earlier files hold.
  void restart_at(int64_t step);
  const std::string& path() const { return path_; }

 private:
  void write(const std::string& event);
  std::string path_;
  std::mutex mu_;
  std::FILE* file_ = nullptr;
};

}  // namespace tach
