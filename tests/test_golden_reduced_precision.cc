// The bf16 and f16 references of transformers' forward (tests/fixtures/reduced_precision, written by
// scripts/golden/make_bf16_references.py) on the CPU: that each file says what made it and ran in
// the dtype it names, that every family has one, and that tach's CPU forward lands within the
// tolerance test_cuda_bf16_models.cc holds the GPU to, right- and left-padded and one row at a time
// (tach's f32 is transformers' f32 to 1e-4, so this checks the references' rows, padding and
// positions, and the near-tie rule of the greedy tokens, before any GPU reads them).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <set>
#include <string>

#include "golden_check.h"
#include "model/family.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

using Rows = std::vector<std::vector<int32_t>>;

TEST(ReducedPrecisionReferences, SayWhatMadeThemAndHoldOneOutputPerRow) {
  const auto refs = test::reduced_precision_references();
  ASSERT_FALSE(refs.empty()) << "no references in " << test::fixtures_dir() << "/reduced_precision";
  for (const auto& ref : refs) {
    SCOPED_TRACE(ref.name);
    const nlohmann::json& j = ref.j;
    for (const char* key : {"torch", "transformers", "attn_implementation", "generator", "architecture", "kind"})
      EXPECT_FALSE(j.at(key).get<std::string>().empty()) << key;
    // The generator is named from the repository's root (fixtures_dir() is tests/fixtures).
    EXPECT_TRUE(std::filesystem::exists(test::fixtures_dir() + "/../../" + j["generator"].get<std::string>()))
        << j["generator"];
    EXPECT_TRUE(j["attn_implementation"] == "sdpa" || j["attn_implementation"] == "eager") << j["attn_implementation"];
    // The file's name ends in the dtype it ran in, and the checkpoint is the one the name gives.
    const std::string dtype = j["dtype"].get<std::string>();
    EXPECT_EQ(ref.name.substr(ref.name.rfind('.') + 1), dtype);
    EXPECT_EQ(std::filesystem::path(ref.checkpoint).filename().string(), ref.name.substr(0, ref.name.rfind('.')));
    EXPECT_EQ(test::expected_json(ref.checkpoint)["architecture"], j["architecture"]);
    const auto rows = j["input_rows"].get<Rows>();
    if (j.contains("outputs")) {
      for (const char* side : {"right", "left", "unpadded"}) {
        ASSERT_EQ(j["outputs"][side].size(), rows.size()) << side;
        if (j["kind"] == "bare") {
          for (size_t r = 0; r < rows.size(); ++r) EXPECT_EQ(j["outputs"][side][r].size(), rows[r].size()) << side;
        }
        // A forward that ran in f32 by mistake would sit at 0 from transformers' f32: a reduced
        // dtype's rounding is at least 1e-4 of the outputs' scale over these layers.
        EXPECT_GT(j["f32_scaled_error"][side].get<double>(), 1e-4) << side;
      }
    }
    if (j["kind"] == "causal_lm") {
      const size_t n = j["new_tokens"].get<size_t>();
      for (const char* key : {"generated", "greedy_margin", "greedy_scale"}) {
        ASSERT_EQ(j[key].size(), rows.size()) << key;
        for (const auto& row : j[key]) EXPECT_EQ(row.size(), n) << key;
      }
      for (size_t r = 0; r < rows.size(); ++r)
        for (size_t s = 0; s < n; ++s) {
          EXPECT_GE(j["greedy_margin"][r][s].get<double>(), 0);
          EXPECT_GE(j["greedy_scale"][r][s].get<double>(), j["greedy_margin"][r][s].get<double>() / 2);
        }
    }
  }
}

// Each family tach builds has a bf16 reference for one of its architectures, so
// test_cuda_bf16_models.cc covers it.
TEST(ReducedPrecisionReferences, CoverEveryFamily) {
  std::set<std::string> architectures;
  for (const auto& ref : test::reduced_precision_references())
    if (ref.dtype == DType::bf16) architectures.insert(ref.j["architecture"].get<std::string>());
  for (const auto& family : model::model_families()) {
    bool covered = family.decoder && architectures.count(family.decoder->causal_lm_architecture);
    for (const auto& [architecture, head] : model::family_architectures(family))
      covered = covered || architectures.count(architecture);
    EXPECT_TRUE(covered) << family.name << " has no bf16 reference: add a checkpoint of it to "
                         << "scripts/golden/make_bf16_references.py's CHECKPOINTS";
  }
}

class CpuAgainstReducedPrecision : public ::testing::TestWithParam<std::string> {};

// tach's f32 on the CPU is transformers' f32 (to 1e-4), which the reference's own measurement puts
// within a third of the tolerance: anything further is a reference whose rows, padding or positions
// are not what tach is fed.
TEST_P(CpuAgainstReducedPrecision, F32IsWithinTheTolerance) {
  const test::ReducedPrecisionReference ref = test::reduced_precision_reference(GetParam());
  test::check_against_reduced_precision_reference(*load_model(ref.checkpoint), ref,
                                                  test::reduced_precision_tolerance(ref));
}

// tach's bf16 on the CPU (the GEMMs' inputs rounded to bf16, f32 between them) is another
// implementation of the arithmetic the reference ran, nearer f32 than transformers' bf16 (whose
// residual stream and attention are bf16 too): it must pass the GPU's rule, near ties and all.
TEST_P(CpuAgainstReducedPrecision, Bf16IsWithinTheTolerance) {
  const test::ReducedPrecisionReference ref = test::reduced_precision_reference(GetParam());
  if (ref.dtype != DType::bf16) GTEST_SKIP() << "the CPU computes in f32 or bf16, not " << dtype_name(ref.dtype);
  LoadOptions options;
  options.compute = DType::bf16;
  test::check_against_reduced_precision_reference(*load_model(ref.checkpoint, options), ref,
                                                  test::reduced_precision_tolerance(ref));
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(References, CpuAgainstReducedPrecision,
                         ::testing::ValuesIn(test::reduced_precision_reference_names()), test_name);

}  // namespace
}  // namespace tach
