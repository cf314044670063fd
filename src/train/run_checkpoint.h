// Resume checkpoints: runs/<run_id>/checkpoint-<step>/ holds the master weights, the optimizer's
// moments and the trainer's counters. Each is written to a temporary directory and renamed into
// place, so every checkpoint-<step> directory that exists is complete; older ones are removed
// only after a newer one is in place.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "train/optimizer.h"
#include "train/parameters.h"

namespace tach::train {

void save_run_checkpoint(const std::string& run_dir, int64_t step, const ParameterTable& params,
                         const AdamWOptimizer& optimizer, const nlohmann::json& trainer_state);

// The newest complete checkpoint directory under run_dir, or "" when there is none.
std::string latest_run_checkpoint(const std::string& run_dir);

// Restores parameters and optimizer moments (every tensor checked by name and shape); returns
// the trainer state saved with them.
nlohmann::json load_run_checkpoint(const std::string& dir, ParameterTable& params, AdamWOptimizer& optimizer);

}  // namespace tach::train
