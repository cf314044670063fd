// Built-in model presets (config only; weights are synthesised by WeightBinder::synthetic).
#pragma once

#include <string>
#include <vector>

#include "model/config.h"

namespace tach::model {

struct PresetConfig {
  EncoderConfig config;
  std::string description;
  std::string config_json;  // the text it was parsed from (training saves it with the weights)
};

struct Qwen2PresetConfig {
  Qwen2Config config;
  std::string description;
  std::string config_json;  // as PresetConfig's
};

std::vector<std::string> encoder_preset_list();  // BERT and DistilBERT presets (all: tach::preset_names)
PresetConfig preset_config(const std::string& name);
bool is_qwen2_preset(const std::string& name);
Qwen2PresetConfig qwen2_preset_config(const std::string& name);
std::vector<std::string> qwen2_preset_list();

}  // namespace tach::model
