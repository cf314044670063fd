// The model families tach builds, in one table: each family's model_types, its presets, its
// inference loader and the architecture numbers tach estimate needs. load_model, preset_names,
// tach estimate, training and the CLI's help read it; a new family is one more row (and its
// files), and no family's loader includes another's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tach/model.h"

namespace tach::model {

// The numbers the memory formulas need, whatever the family.
struct ArchitectureSummary {
  std::string name;  // the architecture as config.json names it (or the model_type)
  bool decoder = false, tied = false;
  int64_t V = 0, C = 0, L = 0, H = 0, KVH = 0, D = 0, I = 0;
  int64_t P = 0;       // learned positions (0 for rotary)
  int64_t Tt = 0;      // token types
  int64_t labels = 0;  // classifier outputs (0: no head)
  int64_t layer_params() const;
  int64_t parameters() const;
};

struct ModelFamily {
  const char* name;                              // "BERT / DistilBERT encoders", "Qwen2 decoders"
  std::vector<std::string> model_types;          // config.json's model_type values it builds
  std::vector<std::string> (*presets)();         // its built-in presets
  std::string (*preset_model_type)(const std::string& preset);
  std::unique_ptr<Model> (*load)(const ModelLocation& location, const LoadOptions& options);
  ArchitectureSummary (*summarize)(const ModelLocation& location);
};

const std::vector<ModelFamily>& model_families();
// The family that builds a model_type; throws naming the ones tach builds.
const ModelFamily& model_family(const std::string& model_type);
// A preset's or a checkpoint's model_type (config.json's).
std::string model_type_of(const ModelLocation& location);
ArchitectureSummary summarize_architecture(const ModelLocation& location);

}  // namespace tach::model
