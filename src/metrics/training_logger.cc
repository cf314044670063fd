// TrainingLogger: JSONL as steps come, JSON on export. Schemas in docs/formats.md.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/error.h"
#include "tach/metrics.h"

namespace tach {

namespace {

// JSON has no NaN: statistics that are undefined (an empty series) are written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json stats_json(const SeriesStats& s) {
  return {{"count", s.count},     {"mean", number(s.mean)}, {"std", number(s.std)}, {"min", number(s.min)},
          {"max", number(s.max)}, {"p50", number(s.p50)},   {"p95", number(s.p95)}, {"p99", number(s.p99)}};
}

nlohmann::json all_stats(const MetricTracker& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& name : m.names()) {
    j[name] = stats_json(m.stats(name));
    j[name]["rejected"] = m.rejected(name);
  }
  return j;
}

// The TensorBoard tag of a logged metric: grouped so that TensorBoard shows one section each.
std::string tensorboard_tag(const std::string& key) {
  if (key.rfind("eval_", 0) == 0) return "eval/" + key.substr(5);
  if (key.rfind("memory_", 0) == 0 || key == "rss_bytes") return "memory/" + key;
  return "train/" + key;
}

}  // namespace

TrainingLogger::TrainingLogger(std::string jsonl_path, bool append) : jsonl_path_(std::move(jsonl_path)) {
  if (!jsonl_path_.empty()) {
    std::ofstream out(jsonl_path_, append ? std::ios::app : std::ios::trunc);
    check(static_cast<bool>(out), jsonl_path_ + ": cannot create the training log");
  }
}

void TrainingLogger::log_step(int64_t step, const std::map<std::string, double>& metrics,
                              const std::vector<std::optional<double>>& scores) {
  metrics_.update_batch(metrics, step);
  nlohmann::json line = {{"step", step}};
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [k, v] : metrics) m[k] = number(v);
  line["metrics"] = m;
  if (!scores.empty()) {
    nlohmann::json s = nlohmann::json::array();
    for (const auto& x : scores) {
      scores_.update(x);
      s.push_back(x ? number(*x) : nlohmann::json(nullptr));
    }
    line["scores"] = s;
  }
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu_);
  if (tensorboard_)
    for (const auto& [k, v] : metrics) tensorboard_->scalar(tensorboard_tag(k), v, step);
  step_lines_.push_back(text);
  if (!jsonl_path_.empty()) {
    std::ofstream out(jsonl_path_, std::ios::app);
    out << text << "\n";
    out.flush();
    check(static_cast<bool>(out), jsonl_path_ + ": write failed");
  }
}

void TrainingLogger::save_checkpoint_metrics(const std::string& name) {
  const std::string stats = all_stats(metrics_).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu_);
  checkpoints_.emplace_back(name, stats);
}

std::string TrainingLogger::export_all() const {
  const auto sc = scores_.summary();
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [v, n] : sc.counts)
    counts[nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)] = n;
  nlohmann::json j = {{"schema", "tach.training_log/1"},
                      {"metrics", all_stats(metrics_)},
                      {"scores",
                       {{"total", sc.total},
                        {"valid", sc.valid},
                        {"invalid", sc.invalid},
                        {"invalid_rate", sc.invalid_rate},
                        {"mean", number(sc.mean)},
                        {"counts", counts}}}};
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& l : step_lines_) steps.push_back(nlohmann::json::parse(l));
  j["steps"] = steps;
  nlohmann::json cps = nlohmann::json::object();
  for (const auto& [name, stats] : checkpoints_) cps[name] = nlohmann::json::parse(stats);
  j["checkpoints"] = cps;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void TrainingLogger::export_all(const std::string& path) const {
  std::ofstream out(path, std::ios::trunc);
  check(static_cast<bool>(out), path + ": cannot write");
  out << export_all() << "\n";
  check(static_cast<bool>(out.flush()), path + ": write failed");
}

}  // namespace tach
