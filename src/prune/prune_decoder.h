// tach prune for the decoder families (Llama, Mistral, Qwen2, Qwen3, Gemma 3) and ModernBERT:
// whole key/value groups of heads, FFN neurons and layers removed, written as a config.json that
// transformers 5 reads unchanged (fewer num_attention_heads and num_key_value_heads with head_dim
// kept, a smaller intermediate_size and num_hidden_layers, layer_types where kinds would move).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/family.h"
#include "tach/prune.h"

namespace tach::prune {

// `dir`: the checkpoint's directory; `config`: its config.json, of a decoder row of `family`.
PruneResult prune_decoder_model(const PruneOptions& o, const std::string& dir, const nlohmann::json& config,
                                const model::ModelFamily& family);

}  // namespace tach::prune
