// Opening a model for training: where it is, its config (typed and as JSON, for saving), and a
// binder over its weights (or a preset's synthetic ones). Training builds BERT and DistilBERT
// sequence classifiers; other families are refused with the reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/weight_binder.h"

namespace tach::train {

struct TrainingModelSource {
  model::ModelLocation location;
  model::EncoderConfig config;
  nlohmann::json config_json;  // config.json as read
  std::string source;          // the directory, or "synthetic weights (seed N): ..."
  bool checkpoint_has_head = false;  // a classifier is in the weights
  std::unique_ptr<model::WeightStore> store;
  std::unique_ptr<model::WeightBinder> binder;
};

TrainingModelSource open_training_model(const std::string& spec, uint64_t seed);

}  // namespace tach::train
