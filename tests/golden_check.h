// Comparing tach's outputs with the expected.json written by scripts/golden/make_encoder_fixtures.py
// and make_qwen2_fixtures.py; shared by the CPU goldens and the GPU tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tach/model.h"

namespace tach::test {

// Loads the model in dir (with `options`: a device, a compute dtype), runs its input batch, and
// checks logits or hidden states against transformers' within `tolerance` relative (1e-4 for
// f32; gtest assertions).
void check_encoder_against_transformers(const std::string& dir, const LoadOptions& options = {},
                                        double tolerance = 1e-4);

// The fixture's expected.json.
nlohmann::json expected_json(const std::string& dir);

// Largest |got - want| over the largest |want| (floor 1e-3): relative to the scale of the logits.
double scaled_error(const float* got, const std::vector<float>& want);

// A Qwen2 classifier fixture's batch, right- and left-padded: logits element-wise within 1e-4
// relative (floor 1e-3) of transformers'.
void check_decoder_classifier_against_transformers(const Model& model, const std::string& dir);

// A Qwen2 causal-LM fixture: vocabulary logits within 1e-4 of each row's scale, then greedy
// generation of the fixture's length, token for token. Returns the generation (for timing checks).
Generation check_decoder_lm_against_transformers(const Model& model, const std::string& dir);

// A bare bidirectional model's fixture (ModernBERT): the final hidden states at every real token
// of right- and left-padded batches within 1e-4 of transformers' (padding on either side must not
// leak in).
void check_hidden_states_against_transformers(const Model& model, const std::string& dir);

}  // namespace tach::test
