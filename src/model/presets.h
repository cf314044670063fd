// Built-in model presets (config only; weights are synthesised by WeightBinder::synthetic).
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/decoder_config.h"
#include "tach/error.h"

namespace tach::model {

struct PresetConfig {
  EncoderConfig config;
  std::string description;
  std::string config_json;  // the text it was parsed from (training saves it with the weights)
};

struct DecoderPresetConfig {
  DecoderConfig config;
  std::string description;
  std::string config_json;  // as PresetConfig's
};

std::vector<std::string> encoder_preset_list();  // BERT and DistilBERT presets
PresetConfig preset_config(const std::string& name);
// Decoders of every family (model/presets_decoders.cc): published configs, synthetic weights.
bool is_decoder_preset(const std::string& name);
DecoderPresetConfig decoder_preset_config(const std::string& name);
std::string decoder_preset_json(const std::string& name);
std::string decoder_preset_description(const std::string& name);
std::vector<std::string> decoder_preset_list();
// Every preset, and the model_type its config names.
std::vector<std::string> all_preset_names();
std::string preset_model_type(const std::string& name);
// "unknown preset", listing every preset with its description.
Error unknown_preset(const std::string& name);

}  // namespace tach::model
