// Ranking a model's units by first-order importance on calibration data (Michel et al. 2019,
// "Are Sixteen Heads Really Better than One?"), with tach's own forward and backward: an
// encoder's heads, a decoder's key/value groups (the query heads sharing a key/value head, gated
// together, as tach prune removes them), FFN neurons and layers.
//
// Each unit gets a gate xi = 1 on what it contributes; |dL/dxi| is the first-order change of the
// loss were the unit removed (xi = 0). L is the loss of the model's own head on one calibration
// row, the loss tach train lowers for that head (prune/calibration.h reads the rows as it does),
// in f32, dropout off:
//   sequence classification  cross-entropy, MSE or BCE as config.json's problem_type says
//   token classification     cross-entropy over the row's labelled tokens (a word's first sub-token)
//   question answering       (CE(start) + CE(end)) / 2 over one window of a question's context
//   masked LM                cross-entropy over the vocabulary at the row's masked tokens
// A unit's score is |dL/dxi| averaged over the rows (a masked-LM row with no masked token has no
// loss and is not scored):
//   head h     |sum over the row's tokens of <context_h, dL/dcontext_h>|, context_h head h's
//              columns of the attention output projection's input (a decoder's key/value group:
//              its query heads' columns together)
//   neuron j   |sum over tokens of act_j * dL/dact_j|, act the FFN activation's output
//   layer l    |sum over tokens of <out - in, dL/dout>|: a gate on the layer's whole contribution,
//              out = in + xi (layer(in) - in), xi = 0 being the layer removed (its LayerNorms
//              too, which the sum of its heads' and neurons' scores would leave out)
// Padding tokens are left out of every sum. Scores are not normalised per layer: heads and
// neurons are ranked within their layer, where a per-layer scale changes nothing, and raw scores
// stay comparable across layers (which --layers ranks).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/family.h"
#include "prune/unit_scores.h"
#include "tach/prune.h"

namespace tach::prune {

// What the scores were computed on, for prune_scores.json.
struct Calibration {
  std::string dataset;  // the path as given
  std::string split;    // a JSON split file's or a Hub dataset's, else empty
  int64_t samples = 0;  // examples read: the first --calibration-samples (all when fewer)
  int64_t rows = 0;     // rows scored: the examples, question answering's windows, less rows with no loss
  int64_t tokens = 0;   // their tokens, padding aside
  std::string head;     // head_name: sequence-classification, token-classification, ...
  std::string loss;     // a sequence classifier's problem_type, or the per-token head's loss in words
  int64_t max_length = 0, doc_stride = 0;  // question answering's windows (doc_stride 0: other heads)
  nlohmann::json masking;                  // the masked LM's: seed, epoch, probability
  double mean_loss = 0;                    // the head's loss, a mean over the rows scored
};

// --by and the calibration options, before any model is read: a ranking tach has not, data given
// where nothing reads it, importance asked of a family it cannot rank that way (usage errors).
void check_ranking_options(const PruneOptions& options, const model::ModelFamily& family);

// Throws UsageError for options that cannot work (no dataset, a count below 1, data the head cannot
// read) and Error for a model that has no head to take a loss from. A head-pruned encoder
// (pruned_heads) is scored on the heads it has left; the heads pruned before score NaN.
UnitScores importance_scores(const PruneOptions& options, const std::string& model_dir, Calibration* calibration);

// prune_scores.json's and prune_summary.json's "calibration": what the scores were computed on and how.
nlohmann::json calibration_json(const Calibration& calibration);

// The same in words, for the terminal (PruneResult::calibration): the data, the examples and rows,
// the head and its loss with its mean value.
std::string calibration_text(const Calibration& calibration);

}  // namespace tach::prune
