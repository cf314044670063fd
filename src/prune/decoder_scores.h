// Ranking a decoder's (and ModernBERT's) prunable units: each key/value group of attention heads,
// each FFN neuron, each layer.
#pragma once

#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/decoder_config.h"
#include "model/family.h"
#include "prune/unit_scores.h"

namespace tach::prune {

// Where a decoder checkpoint's layer tensors are: "model.layers." for a task model (QA's
// "transformer.layers." where the family keeps that name), "layers." for a bare one.
struct DecoderTensors {
  std::string layer_prefix;  // up to the layer index
  const model::DecoderConfig* config = nullptr;
  const model::DecoderTensorNames* names = nullptr;
  // "<layer_prefix><l>.<role>.<what>"
  std::string name(int64_t layer, const std::string& role, const char* what = "weight") const;
};
DecoderTensors decoder_tensors(const model::WeightStore& store, const model::ModelFamily& family,
                               const model::DecoderConfig& config);

// Rows of the query, key and value projections key/value group g holds: q [H D, C] rows
// q0 .. q0 + q_rows = g G D .. (g + 1) G D, k and v [KVH D, C] rows g D .. (g + 1) D, with
// G = H / KVH query heads per group (transformers' repeat_kv: query head h reads key/value head
// h / G). The output projection's columns are q's rows. In a fused q|k|v (ModernBERT's Wqkv
// [3 H D, C]) k's rows follow q's and v's k's.
struct GroupRows {
  int64_t q0, q_rows, k0, v0, kv_rows;
};
GroupRows group_rows(const model::DecoderConfig& c, int64_t group);

// Scores per layer l: heads[l][g] for key/value group g, neurons[l][j], layers[l]. The L2 norm
// of the unit's weights: a group's query, key and value rows and its output-projection columns;
// a neuron's gate and up rows (Wi's two halves) and its down column; a layer's groups and neurons
// together (biases and norms aside). Higher: keep.
UnitScores decoder_magnitude_scores(const model::WeightStore& store, const DecoderTensors& t);

}  // namespace tach::prune
