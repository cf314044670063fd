// A training run's directory and its files (train/run_files.h).
#include "train/run_files.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "train/run_names.h"

namespace tach::train {

namespace fs = std::filesystem;

std::string claim_run_dir(const std::string& runs_dir, const std::string& model, const std::string& wanted) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  check(!ec, runs_dir + ": cannot create (" + ec.message() + ")");
  if (!wanted.empty()) {
    // Created, not tested then created: of two runs started at once under one id, one gets it.
    const fs::path p = fs::path(runs_dir) / wanted;
    if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);  // an id such as group/run
    const bool created = fs::create_directory(p, ec);
    check(!ec, p.string() + ": cannot create (" + ec.message() + ")");
    check(created, p.string() + " exists already: pick another --run-id, or continue it with --resume " + p.string());
    return p.string();
  }
  const std::string base = "train-" + utc_stamp() + "-" + model_name_for_runs(model);
  for (int n = 1; n < 1000; ++n) {
    const fs::path p = fs::path(runs_dir) / (n == 1 ? base : base + "-" + std::to_string(n));
    if (fs::create_directory(p, ec)) return p.string();
  }
  throw Error(runs_dir + ": no free run directory name for " + base);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  check(static_cast<bool>(in), path + ": cannot read");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) { throw Error(path + ": " + e.what()); }
}

void keep_lines(const std::string& path, const std::function<bool(const std::string&, size_t)>& keep) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  for (size_t i = 0; std::getline(in, line); ++i)
    if (keep(line, i)) kept += line + "\n";
  in.close();
  model::write_file_atomically(path, kept);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double p90(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = 0.9 * double(v.size() - 1);
  const size_t lo = size_t(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

}  // namespace tach::train
