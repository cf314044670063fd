// Comparing tach's outputs with the expected.json written by scripts/golden/make_encoder_fixtures.py.
#pragma once

#include <string>

namespace tach::test {

// Loads the model in dir, runs its input batch, and checks logits or hidden states against
// transformers' within 1e-4 relative (gtest assertions).
void check_encoder_against_transformers(const std::string& dir);

}  // namespace tach::test
