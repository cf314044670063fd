// Logits and hidden states against Hugging Face transformers, on models transformers itself
// wrote with save_pretrained (scripts/golden/make_encoder_fixtures.py).
#include <gtest/gtest.h>

#include "golden_check.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

class GoldenEncoder : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenEncoder, MatchesTransformers) { test::check_encoder_against_transformers(test::fixtures_dir() + "/encoders/" + GetParam()); }

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenEncoder,
                         ::testing::Values("bert-cls2-f32", "bert-cls3-f16", "bert-reg1-bf16", "bert-base-model-f32",
                                           "distilbert-cls2-f32", "distilbert-cls3-bf16", "distilbert-cls1-f16",
                                           "distilbert-base-model-f32", "roberta-cls2-f32", "roberta-base-model-f32",
                                           "xlm-roberta-cls3-bf16", "xlm-roberta-base-model-f32"),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

TEST(GoldenEncoderLabels, ProblemTypesAndLabels) {
  auto m3 = load_model(test::fixtures_dir() + "/encoders/bert-cls3-f16");
  EXPECT_EQ(m3->info().labels, (std::vector<std::string>{"neg", "neu", "pos"}));
  EXPECT_EQ(m3->info().problem_type, "single_label_classification");
  auto m1 = load_model(test::fixtures_dir() + "/encoders/bert-reg1-bf16");
  EXPECT_EQ(m1->info().problem_type, "regression");
}

}  // namespace
}  // namespace tach
