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

// transformers' forward of a fixture checkpoint run in bf16 or f16 (dtype=torch.bfloat16: weights,
// residual stream, GEMMs and attention in that dtype), written by
// scripts/golden/make_bf16_references.py as tests/fixtures/reduced_precision/NAME.DTYPE.json.
struct ReducedPrecisionReference {
  std::string name;        // "llama-lm-yarn-bf16.bf16": the file's name without .json
  std::string checkpoint;  // the checkpoint's directory (under tests/fixtures)
  DType dtype = DType::bf16;
  nlohmann::json j;  // the file
};

// Every reference file, sorted by name; an empty list when the directory is missing.
std::vector<ReducedPrecisionReference> reduced_precision_references();
// The reference names only (for INSTANTIATE_TEST_SUITE_P), and one by name.
std::vector<std::string> reduced_precision_reference_names();
ReducedPrecisionReference reduced_precision_reference(const std::string& name);

// The scaled error another implementation of the same reduced-precision arithmetic may show against
// the reference: 3x the reference's own largest distance from transformers' f32 forward, at least
// 4 units of the dtype's rounding (the reasoning is at the definition, golden_check.cc).
double reduced_precision_tolerance(const ReducedPrecisionReference& ref);

// The model (loaded from ref.checkpoint) against the reference, gtest assertions: the head's outputs
// for the rows right-padded, left-padded and one at a time within `tolerance` scaled error (a
// classifier's logits over the batch's largest |logit|, vocabulary logits per row, hidden states
// per token); a causal LM's logits through both lm_logits and prefill_logits, then its greedy
// tokens, equal to transformers' except after a step whose reference margin between the top two
// logits is within 2 * tolerance of the step's scale (a near tie either implementation may break
// either way): such a step is printed, and that row's later tokens (a different prefix) are not
// compared. Prints one summary line.
void check_against_reduced_precision_reference(const Model& model, const ReducedPrecisionReference& ref,
                                               double tolerance);

}  // namespace tach::test
