// What tach estimate knows of a model: any config.json, not only the families tach builds. A
// family tach builds is summarised by its row (model/family.h); Mixtral, Qwen2-MoE, Qwen3-MoE and
// DeepSeek-V2/V3 (experts, shared experts, dense first layers, multi-head latent attention) by
// their own fields here; any other decoder with the standard fields as a Llama-shaped one, with
// a note saying so. A config without them is refused, naming the missing fields.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/family.h"

namespace tach::estimate {

// spec: preset:NAME (the model presets and the config-only ones below), a directory or a hub id.
model::ArchitectureSummary describe_model(const std::string& spec);
// config.json of a model_type tach does not build.
model::ArchitectureSummary describe_config(const nlohmann::json& config, const std::string& source);
// The heads each layer of a head-pruned encoder keeps (config.json's pruned_heads), layer by layer;
// empty for any other model (a preset, a decoder, an encoder with all its heads).
std::vector<int64_t> pruned_layer_heads(const std::string& spec);
// Presets that hold a published config for tach estimate only (tach does not run them).
std::vector<std::string> config_only_presets();

}  // namespace tach::estimate
