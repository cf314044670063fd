// A training run's directory and its files: the directory claimed, JSON read with the file
// named in its errors, log files trimmed on resume, and numbers written into CSV cells; and the
// step statistics summary.json reports (train sits below bench, whose stats it cannot use).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tach::train {

// A new run directory under runs_dir: `wanted` (refused where it exists), or a free
// train-<UTC stamp>-<model> name.
std::string claim_run_dir(const std::string& runs_dir, const std::string& model, const std::string& wanted);
nlohmann::json read_json(const std::string& path);
// Keeps the lines of a steps.jsonl (or the rows of a CSV) that a resumed run still stands by.
void keep_lines(const std::string& path, const std::function<bool(const std::string&, size_t)>& keep);
std::string csv_number(double v);  // 9 significant digits; empty for a NaN or infinity
double median(std::vector<double> v);
double p90(std::vector<double> v);  // linear between order statistics (numpy's default)

}  // namespace tach::train
