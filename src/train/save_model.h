// Saving a fine-tuned classifier as a Hugging Face model directory that transformers and tach
// load: config.json (the source's, with the head's labels and architecture), model.safetensors
// (every parameter under its Hugging Face name, f32) and the tokenizer files, written to a
// temporary directory and renamed into place.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "train/trainable_model.h"

namespace tach::train {

// source_config: config.json as read. tokenizer_dir: where tokenizer files are copied from ("" for none).
void save_hf_model(const std::string& dir, const TrainableModel& m, const nlohmann::json& source_config,
                   const std::string& problem_type, const std::string& tokenizer_dir);

// The config.json save_hf_model writes.
nlohmann::json trained_config(const TrainableModel& m, const nlohmann::json& source_config,
                              const std::string& problem_type);

}  // namespace tach::train
