// Built-in model presets (config only; weights are synthesised by WeightBinder::synthetic).
#pragma once

#include <string>
#include <vector>

#include "model/config.h"

namespace tach::model {

struct PresetConfig {
  EncoderConfig config;
  std::string description;
};

std::vector<std::string> preset_list();
PresetConfig preset_config(const std::string& name);

}  // namespace tach::model
