// Comparing tach's outputs with the expected.json written by scripts/golden/make_encoder_fixtures.py.
#pragma once

#include <string>

#include "tach/model.h"

namespace tach::test {

// Loads the model in dir (with `options`: a device, a compute dtype), runs its input batch, and
// checks logits or hidden states against transformers' within `tolerance` relative (1e-4 for
// f32; gtest assertions).
void check_encoder_against_transformers(const std::string& dir, const LoadOptions& options = {},
                                        double tolerance = 1e-4);

}  // namespace tach::test
