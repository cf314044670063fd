// Opening a model for training: where it is, its config (typed and as JSON, for saving), and a
// binder over its weights (or a preset's synthetic ones); then building the family's trainable
// model over it. Every family's sequence classifier trains: the encoders on trainable_encoder,
// every decoder family on trainable_decoder; the per-token heads wherever the family's row has
// them (the encoders, ModernBERT, the causal decoders but Gemma 3).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/decoder_config.h"
#include "model/family.h"
#include "model/weight_binder.h"
#include "train/trainable_model.h"

namespace tach::train {

struct TrainingModelSource {
  model::ModelLocation location;
  std::string model_type;                      // config.json's
  const model::ModelFamily* family = nullptr;  // its row in the family table
  model::EncoderConfig config;                 // encoders
  model::DecoderConfig decoder;                // decoders
  bool is_decoder() const;
  nlohmann::json config_json;        // config.json as read
  std::string source;                // the directory, or "synthetic weights (seed N): ..."
  bool checkpoint_has_head = false;  // a sequence classifier is in the weights
  // The head the checkpoint was published with (config.json's architecture; a classifier's
  // tensors under a bare architecture count as one, as inference takes them).
  Head checkpoint_head = Head::none;
  bool has_head(Head task) const { return checkpoint_head == task; }
  std::unique_ptr<model::WeightStore> store;
  std::unique_ptr<model::WeightBinder> binder;

  // Either family's: the head's labels and problem type as config.json says, the pad token
  // (-1: none), and the dropout rates of training mode.
  const std::vector<std::string>& id2label() const;
  const std::string& problem_type() const;
  int64_t pad_token_id() const;
  int64_t vocab_size() const;  // the word embeddings' rows
  // A per-token head's own dropout (DropoutRates::head) comes with `task`.
  DropoutRates dropout(Head task = Head::sequence_classification) const;
};

TrainingModelSource open_training_model(const std::string& spec, uint64_t seed);

// The trainable model with the head `task`: id2label and problem_type say a classifier (a head
// of another size, or one the checkpoint was not published with, is initialised as transformers
// initialises it, from init_seed). notes: what the binder left over and what was initialised,
// with transformers' note. A per-token head the family's row lacks is refused, naming the tasks
// the family trains. device: where its steps run
// (TrainableModel::device), as the run's options say; every parameter is put there.
std::unique_ptr<TrainableModel> build_trainable_model(const TrainingModelSource& source,
                                                      const std::vector<std::string>& id2label,
                                                      const std::string& problem_type, uint64_t init_seed,
                                                      std::vector<std::string>* notes,
                                                      Head task = Head::sequence_classification,
                                                      Device device = Device::cpu());

}  // namespace tach::train
