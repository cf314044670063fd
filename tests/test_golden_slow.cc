// The DistilBERT-base-sized golden case (label slow).
#include <gtest/gtest.h>

#include <filesystem>

#include "golden_check.h"

namespace tach {
namespace {

// DistilBERT-base size (66M parameters), weights written by the generator with --base into
// build/golden; too big to commit, so the test skips where it has not been generated.
TEST(GoldenEncoderSlow, DistilbertBaseSized) {
  const std::string dir = std::string(TACH_BINARY_DIR) + "/golden/distilbert-base-random";
  if (!std::filesystem::exists(dir + "/expected.json"))
    GTEST_SKIP() << dir << " not generated: run scripts/golden/make_encoder_fixtures.py --base " << TACH_BINARY_DIR
                 << "/golden (needs transformers)";
  test::check_encoder_against_transformers(dir);
}

}  // namespace
}  // namespace tach
