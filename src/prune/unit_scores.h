// Ranking an encoder's prunable units: each attention head, each FFN neuron, each layer.
#pragma once

#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/family.h"

namespace tach::prune {

// Where an encoder checkpoint's layer tensors are: "bert." + "encoder.layer." for a task model,
// "encoder.layer." for a bare one.
struct EncoderTensors {
  std::string layer_prefix;  // up to the layer index
  const model::EncoderConfig* config = nullptr;
  // The layer's tensor "<layer_prefix><l>.<role>.weight" (role: the family's names).
  std::string name(int64_t layer, const std::string& role, const char* what = "weight") const;
};
EncoderTensors encoder_tensors(const model::WeightStore& store, const model::ModelFamily& family,
                               const model::EncoderConfig& config);

// Scores per layer l: heads[l][h] for original head h (NaN for one already pruned), neurons[l][j],
// layers[l]. Higher: keep.
struct UnitScores {
  std::vector<std::vector<double>> heads, neurons;
  std::vector<double> layers;
};

// The L2 norm of each unit's weights: a head's query, key and value rows and its attention-output
// columns; a neuron's intermediate row and its output column; a layer's heads and neurons
// together (biases and LayerNorms aside).
UnitScores magnitude_scores(const model::WeightStore& store, const EncoderTensors& t);

// What each family's magnitudes are made of: a stored weight [rows, cols] as f32 on the host, and
// the sums of squares of its rows [r0, r0 + n) or columns [c0, c0 + n).
Tensor f32_weight(const model::WeightStore& store, const std::string& name);
double rows_squared(const Tensor& w, int64_t r0, int64_t n);
double columns_squared(const Tensor& w, int64_t c0, int64_t n);

// The original indices of the heads layer l still has, in the order its tensors hold them.
std::vector<int64_t> current_heads(const model::EncoderConfig& c, int64_t layer);

}  // namespace tach::prune
