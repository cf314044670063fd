// Logits and hidden states against Hugging Face transformers, on models transformers itself
// wrote with save_pretrained (scripts/golden/make_encoder_fixtures.py).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "ops/attention.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

class GoldenEncoder : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenEncoder, MatchesTransformers) {
  test::check_encoder_against_transformers(test::fixtures_dir() + "/encoders/" + GetParam());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenEncoder,
                         ::testing::Values("bert-cls2-f32", "bert-cls3-f16", "bert-reg1-bf16", "bert-base-model-f32",
                                           "distilbert-cls2-f32", "distilbert-cls3-bf16", "distilbert-cls1-f16",
                                           "distilbert-base-model-f32", "roberta-cls2-f32", "roberta-base-model-f32",
                                           "xlm-roberta-cls3-bf16", "xlm-roberta-base-model-f32", "mpnet-cls2-f32",
                                           "mpnet-base-model-f32"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

// MPNet's relative position buckets for every distance from -600 to 600, against transformers'
// relative_position_bucket (the fixtures' rows reach only distances up to 28).
TEST(GoldenEncoder, MpnetRelativeBucketsMatchTransformers) {
  std::ifstream in(test::fixtures_dir() + "/encoders/mpnet-relative-buckets.json");
  ASSERT_TRUE(in) << "missing mpnet-relative-buckets.json";
  const auto j = nlohmann::json::parse(in);
  const auto want = j["buckets"].get<std::vector<int32_t>>();
  const int64_t first = j["first_distance"].get<int64_t>(), T = int64_t(want.size() + 1) / 2;
  ASSERT_EQ(first, -(T - 1));
  // Query T-1 sees keys 0..2T-2 at distances -(T-1)..T-1.
  const std::vector<int32_t> got = ops::relative_position_buckets(2 * T - 1, 32, 128);
  for (int64_t j2 = 0; j2 < 2 * T - 1; ++j2)
    EXPECT_EQ(got[size_t((T - 1) * (2 * T - 1) + j2)], want[size_t(j2)]) << "distance " << j2 - (T - 1);
}

TEST(GoldenEncoderLabels, ProblemTypesAndLabels) {
  auto m3 = load_model(test::fixtures_dir() + "/encoders/bert-cls3-f16");
  EXPECT_EQ(m3->info().labels, (std::vector<std::string>{"neg", "neu", "pos"}));
  EXPECT_EQ(m3->info().problem_type, "single_label_classification");
  auto m1 = load_model(test::fixtures_dir() + "/encoders/bert-reg1-bf16");
  EXPECT_EQ(m1->info().problem_type, "regression");
}

}  // namespace
}  // namespace tach
