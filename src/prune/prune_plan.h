// What tach prune removes, chosen from the options and the units' scores.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/decoder_config.h"
#include "prune/unit_scores.h"
#include "tach/prune.h"

namespace tach::prune {

// Indices are the original model's: layers 0..L-1, heads 0..H-1 (as config.json's pruned_heads
// counts them; a decoder's: key/value groups 0..KVH-1), neurons 0..I-1.
struct PrunePlan {
  std::vector<int64_t> removed_layers;              // sorted
  std::vector<std::vector<int64_t>> removed_heads;  // per layer, sorted, those already pruned included
  std::vector<std::vector<int64_t>> kept_neurons;   // per layer, sorted; empty: the FFN is untouched
  int64_t new_heads = 0, new_neurons = 0;           // removed by this plan (kept layers only; query heads)
  std::vector<std::string> notes;                   // how a fraction was rounded
  bool removes_nothing() const { return removed_layers.empty() && new_heads == 0 && new_neurons == 0; }
  bool keeps_layer(int64_t l) const;
};

// Checks the options (fractions in [0, 1), lists against the model, a layer left with no heads or
// neurons) and the family's rule for each part asked for; throws naming what is wrong.
PrunePlan plan_pruning(const PruneOptions& o, const model::ModelFamily& family, const model::EncoderConfig& c,
                       const UnitScores& scores);
// A decoder's (and ModernBERT's): heads as whole key/value groups (scores.heads[l][g]), the same
// count in every layer; no per-layer list (config.json has one head count).
PrunePlan plan_decoder_pruning(const PruneOptions& o, const model::ModelFamily& family, const model::DecoderConfig& c,
                               const UnitScores& scores);

// The `n` lowest-scored of `candidates` (ties: the lower index), sorted by index.
std::vector<int64_t> lowest(const std::vector<double>& scores, const std::vector<int64_t>& candidates, int64_t n);

}  // namespace tach::prune
