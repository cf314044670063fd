// Every family on CUDA in bf16 (and the f16 checkpoints in f16) against transformers' forward in
// the same dtype (dtype=torch.bfloat16: weights, residual stream, GEMMs and attention rounded to
// bf16, as a user's bf16 model runs), not against its f32 forward: the references written by
// scripts/golden/make_bf16_references.py from the committed fixture checkpoints,
// tests/fixtures/reduced_precision/NAME.DTYPE.json. Each is checked right-padded, left-padded and
// one row at a time, and a causal LM's greedy tokens too; transformers ran eager attention, as for
// the f32 fixtures (make_bf16_references.py says where sdpa differs). Skipped, saying why, without a
// CUDA device or backend.
//
// The tolerance (test::reduced_precision_tolerance, reasoned in golden_check.cc): two bf16
// implementations of one model each drift from the exact answer by bf16's rounding accumulated over
// the layers, by about as much as bf16 differs from f32. The generator measured transformers' bf16
// against its own f32 forward on each fixture (0.4% to 6% of the outputs' scale); the test allows 3x
// that fixture's figure (at least 4 units of the dtype's rounding), so tach may drift twice as far
// as transformers and still pass, while a wrong mask, position or norm moves the outputs by their
// whole scale. Greedy tokens must be equal except at a step where transformers' own top two logits
// are within 2x the tolerance of each other (either implementation may break such a tie either
// way): that step is printed as "[ near tie ]" and the row's later tokens are not compared.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "golden_check.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

class CudaReducedPrecision : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }
};

TEST_P(CudaReducedPrecision, MatchesTransformersInTheSameDtype) {
  const test::ReducedPrecisionReference ref = test::reduced_precision_reference(GetParam());
  LoadOptions options;
  options.device = Device::cuda(0);
  options.compute = ref.dtype;
  auto model = load_model(ref.checkpoint, options);
  ASSERT_EQ(model->info().device, Device::cuda(0));
  test::check_against_reduced_precision_reference(*model, ref, test::reduced_precision_tolerance(ref));
}

// gtest names: the reference's name with '-' and '.' as '_' ("llama_lm_yarn_bf16_bf16").
std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(References, CudaReducedPrecision,
                         ::testing::ValuesIn(test::reduced_precision_reference_names()), test_name);

}  // namespace
}  // namespace tach
