// `tach prune`: structured pruning of an encoder checkpoint (attention heads, FFN neurons, whole
// layers), ranked by weight magnitude or by first-order importance on calibration data, written as a
// model directory transformers reads, with the scores that ranked the units and a before/after
// summary beside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tach/dataset.h"

namespace tach {

struct PruneOptions {
  std::string model;   // a directory or a hub id in the cache (not a preset)
  std::string output;  // the directory to write (replaced atomically if it exists)
  // Heads: the fraction of each layer's heads to remove (the lowest-ranked), or `heads_list`:
  // config.json's pruned_heads spelling, {"layer": [head, ...]} in original head indices.
  double heads = 0;
  std::string heads_list;
  double ffn = 0;  // the fraction of each layer's FFN neurons to remove, the same count in every layer
  // Layers: a count of the lowest-ranked layers to remove ("2"), or a list of indices ("1,3", "4,").
  std::string layers;
  std::string by = "magnitude";  // how units are ranked: magnitude, importance
  // --by importance: calibration data for the model's own head, read as tach train --task reads
  // it (rows of text and label, tagged words, SQuAD questions, texts for a masked LM; a JSON split
  // file's "train" split by default), the number of its first examples used, the tokenizer
  // (empty: the model's directory), the longest row in tokens (capped by the model's positions)
  // and question answering's overlap between a context's windows (0: 128, or half the window
  // when that is less).
  DatasetOptions data;
  int64_t calibration_samples = 128;
  std::string tokenizer;
  int64_t max_length = 128;
  int64_t doc_stride = 0;
};

// Parameters, FLOPs per token and weight bytes of one model.
struct PruneSize {
  int64_t parameters = 0;
  double flops_per_token = 0;  // the encoder's forward at `summary_tokens` tokens, divided by them
  int64_t weight_bytes = 0;
  int64_t layers = 0, heads = 0, ffn_width = 0;  // heads: over all layers; ffn_width: per layer
};

struct PruneResult {
  PruneSize before, after;
  int64_t summary_tokens = 128;
  int64_t removed_heads = 0, removed_neurons = 0, removed_layers = 0;  // neurons: over all layers
  bool unchanged = false;  // nothing was removed: the model's files were copied as they are
  std::string family;      // the family row's name
  // --by importance: what the scores were computed on, in two lines (the data, examples, rows and
  // tokens; the head's loss and its mean); also prune_summary.json's "calibration". Empty otherwise.
  std::string calibration;
  std::vector<std::string> notes;
};

// Throws (tach::Error) naming what is wrong: a fraction outside [0, 1), a layer left with no heads
// or neurons, a family or a part of it without a pruning rule.
PruneResult prune_model(const PruneOptions& options);

}  // namespace tach
