// What tach prune writes for every family: the weights sliced, the scores and the before/after
// summary beside them, or the model's own files where nothing is removed.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tach/tensor.h"
#include "prune/prune_plan.h"
#include "prune/unit_scores.h"
#include "tach/prune.h"

namespace tach::prune {

// Rows `keep` of t [R, ...] (any dtype; a bias [R] too), contiguous.
Tensor take_rows(const Tensor& t, const std::vector<int64_t>& keep);
// Columns `keep` of t [R, K] (any dtype), contiguous.
Tensor take_columns(const Tensor& t, const std::vector<int64_t>& keep);

// prune_scores.json: the ranking's scores and what the plan removed. `head_unit` names what
// heads[l][i] scores ("head", or a decoder's "key/value group").
nlohmann::json scores_json(const UnitScores& s, const PrunePlan& p, const std::string& by,
                           const std::string& head_unit = "head");
nlohmann::json size_json(const PruneSize& s);

// Nothing to remove: the model's files byte for byte into `output`, the scores and summary beside.
void write_unchanged(const std::string& model_dir, const std::string& output, const nlohmann::json& scores,
                     PruneResult& r);
// The pruned model: its tensors and config.json, the model's tokenizer files, then the scores and
// the summary with r.after = after_size(the weights' bytes written).
void write_pruned(const std::string& model_dir, const std::string& output,
                  const std::vector<std::pair<std::string, Tensor>>& tensors, const nlohmann::json& config,
                  const nlohmann::json& scores, const std::function<PruneSize(int64_t weight_bytes)>& after_size,
                  PruneResult& r);

}  // namespace tach::prune
