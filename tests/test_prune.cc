// Pruned checkpoints: loading transformers 4's pruned_heads and smaller FFN widths, against
// transformers on the same weights (scripts/golden/make_prune_fixtures.py), and tach prune.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "golden_check.h"
#include "model/config.h"
#include "model/family.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/prune.h"
#include "prune_scores_check.h"
#include "test_util.h"

namespace tach {
namespace {

class PrunedCheckpoint : public ::testing::TestWithParam<std::string> {};

// Right- and left-padded logits within 1e-4 of transformers' (f32).
TEST_P(PrunedCheckpoint, LogitsMatchTransformers) {
  const std::string dir = test::fixtures_dir() + "/prune/" + GetParam();
  auto model = load_model(dir);
  test::check_decoder_classifier_against_transformers(*model, dir);
}

INSTANTIATE_TEST_SUITE_P(Families, PrunedCheckpoint,
                         ::testing::Values("bert-pruned", "distilbert-pruned", "roberta-pruned"),
                         [](const auto& param_info) { return param_info.param.substr(0, param_info.param.find('-')); });

model::EncoderConfig config_with(const std::string& extra) {
  return model::parse_encoder_config_text(
      R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
          "num_hidden_layers": 2, "intermediate_size": 16)" +
          extra + "}",
      "config.json");
}

std::string error_of(const std::string& extra) {
  try {
    config_with(extra);
  } catch (const Error& e) { return e.what(); }
  return "";
}

TEST(PrunedHeads, ReadPerLayer) {
  const model::EncoderConfig c = config_with(R"(, "pruned_heads": {"1": [1]})");
  EXPECT_EQ(c.heads_in_layer(0), 2);
  EXPECT_EQ(c.heads_in_layer(1), 1);
  EXPECT_EQ(config_with(R"(, "pruned_heads": {})").pruned_heads.size(), 0u);
}

TEST(PrunedHeads, BadListsAreNamed) {
  EXPECT_NE(error_of(R"(, "pruned_heads": {"2": [0]})").find("names layer \"2\"; the model has layers 0 to 1"),
            std::string::npos);
  EXPECT_NE(error_of(R"(, "pruned_heads": {"0": [2]})").find("lists head 2; heads are 0 to 1"), std::string::npos);
  EXPECT_NE(error_of(R"(, "pruned_heads": {"0": [0, 1]})").find("removes every head of layer 0"), std::string::npos);
  EXPECT_NE(error_of(R"(, "pruned_heads": [1])").find("must be an object"), std::string::npos);
}

TEST(PrunedHeads, FamilyWithoutTheRuleIsRefusedByName) {
  try {
    model::parse_encoder_config_text(
        R"({"model_type": "mpnet", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
            "num_hidden_layers": 2, "intermediate_size": 16, "pruned_heads": {"0": [1]}})",
        "config.json");
    FAIL() << "an MPNet config with pruned_heads was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("MPNet"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("relative position bias"), std::string::npos) << e.what();
  }
}

// tach estimate and the parameter counts: the heads a checkpoint lacks are not counted (the tensors'
// elements, 5918, counted in Python).
TEST(PrunedHeads, ParametersCountTheHeadsLeft) {
  const auto a = model::summarize_architecture(model::resolve_model(test::fixtures_dir() + "/prune/bert-pruned"));
  EXPECT_EQ(a.parameters(), 5918);
}

std::string bert_fixture() { return test::fixtures_dir() + "/encoders/bert-cls2-f32"; }

using test::expect_scores_near;
using test::read_json;

// --heads 0.5 --ffn 0.25 --layers 1 by magnitude: the scores, the units removed and the pruned
// model's logits equal the same definition computed in PyTorch, and transformers' logits on it.
TEST(TachPrune, MagnitudeMatchesPyTorch) {
  const nlohmann::json want = read_json(test::fixtures_dir() + "/prune/bert-magnitude.json");
  test::TempDir tmp;
  PruneOptions o;
  o.model = bert_fixture();
  o.output = tmp.file("pruned");
  o.heads = 0.5;
  o.ffn = 0.25;
  o.layers = "1";
  const PruneResult r = prune_model(o);
  const nlohmann::json scores = read_json(o.output + "/prune_scores.json");
  expect_scores_near(scores["heads"], want["head_magnitude"], "heads");
  expect_scores_near(scores["neurons"], want["neuron_magnitude"], "neurons");
  expect_scores_near(scores["layers"], want["layer_magnitude"], "layers");
  EXPECT_EQ(scores["removed_layers"], want["removed_layers"]);
  const nlohmann::json config = read_json(o.output + "/config.json");
  EXPECT_EQ(config["pruned_heads"], want["pruned_heads"]);
  EXPECT_EQ(config["num_hidden_layers"], 1);
  EXPECT_EQ(config["intermediate_size"], 30);
  EXPECT_EQ(r.removed_layers, 1);
  EXPECT_EQ(r.removed_heads, 2);
  EXPECT_EQ(r.removed_neurons, 10);
  EXPECT_LT(r.after.parameters, r.before.parameters);
  EXPECT_LT(r.after.flops_per_token, r.before.flops_per_token);
  EXPECT_LT(r.after.weight_bytes, r.before.weight_bytes);
  EXPECT_EQ(r.after.heads, 2);
  // The summary's parameters are the tensors written.
  EXPECT_EQ(read_json(o.output + "/prune_summary.json")["after"]["parameters"], r.after.parameters);
  std::filesystem::copy_file(test::fixtures_dir() + "/prune/bert-magnitude.json", o.output + "/expected.json");
  auto model = load_model(o.output);
  test::check_decoder_classifier_against_transformers(*model, o.output);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(TachPrune, RemovingNothingChangesNothing) {
  test::TempDir tmp;
  PruneOptions o;
  o.model = bert_fixture();
  o.output = tmp.file("same");
  const PruneResult r = prune_model(o);
  EXPECT_TRUE(r.unchanged);
  for (const char* f : {"config.json", "model.safetensors"})
    EXPECT_EQ(file_bytes(o.output + "/" + f), file_bytes(o.model + "/" + f)) << f;
  // Fractions that round to no unit in a layer remove nothing too.
  o.heads = 0.1;
  o.output = tmp.file("same2");
  EXPECT_TRUE(prune_model(o).unchanged);
  EXPECT_EQ(file_bytes(o.output + "/model.safetensors"), file_bytes(o.model + "/model.safetensors"));
}

// A model pruned twice: the second run ranks the heads left and lists both runs' in pruned_heads.
TEST(TachPrune, PrunesAPrunedModel) {
  test::TempDir tmp;
  PruneOptions o;
  o.model = test::fixtures_dir() + "/prune/bert-pruned";  // pruned_heads {"0": [1, 3], "1": [2]}
  o.output = tmp.file("again");
  o.heads_list = R"({"1": [0]})";
  prune_model(o);
  EXPECT_EQ(read_json(o.output + "/config.json")["pruned_heads"],
            nlohmann::json::parse(R"({"0": [1, 3], "1": [0, 2]})"));
  auto model = load_model(o.output);
  EXPECT_EQ(model->classify(test::padded_batch({{101, 7, 19, 102}, {101, 88, 102}}, 0, false)).size(1), 2);
}

std::string prune_error(PruneOptions o) {
  test::TempDir tmp;
  if (o.model.empty()) o.model = bert_fixture();
  o.output = tmp.file("out");
  try {
    prune_model(o);
  } catch (const Error& e) {
    EXPECT_FALSE(std::filesystem::exists(o.output)) << "nothing is written on an error";
    return e.what();
  }
  return "";
}

TEST(TachPrune, BadInputIsNamed) {
  PruneOptions o;
  o.heads = 1.0;
  EXPECT_NE(prune_error(o).find("--heads must be a fraction in [0, 1), got 1"), std::string::npos);
  o.heads = -0.5;
  EXPECT_NE(prune_error(o).find("--heads must be a fraction in [0, 1), got -0.5"), std::string::npos);
  o.heads = 0.9;
  EXPECT_NE(prune_error(o).find("removes all 4 heads of layer 0; a layer keeps at least one"), std::string::npos);
  o = {};
  o.heads_list = R"({"1": [0, 1, 2, 3]})";
  EXPECT_NE(prune_error(o).find("removes every head of layer 1"), std::string::npos);
  o.heads_list = R"({"1": [7]})";
  EXPECT_NE(prune_error(o).find("names head 7 of layer 1, which has heads [0,1,2,3]"), std::string::npos);
  o = {};
  o.ffn = 1.5;
  EXPECT_NE(prune_error(o).find("--ffn must be a fraction in [0, 1)"), std::string::npos);
  o = {};
  o.layers = "2";
  EXPECT_NE(prune_error(o).find("--layers 2 removes every layer; the model has 2"), std::string::npos);
  o.layers = "0,5";
  EXPECT_NE(prune_error(o).find("--layers lists \"5\"; the model has layers 0 to 1"), std::string::npos);
  o.layers = "two";
  EXPECT_NE(prune_error(o).find("--layers must be a count"), std::string::npos);
}

// Each list names the option it came from, and a layer or head listed twice is refused (a typo for
// another one), not merged.
TEST(TachPrune, ListsNameTheirOptionAndRefuseDuplicates) {
  PruneOptions o;
  o.heads_list = R"({"9": [0]})";
  EXPECT_NE(prune_error(o).find("--heads lists \"9\"; the model has layers 0 to 1"), std::string::npos);
  o.heads_list = R"({"0": [1, 1]})";
  EXPECT_NE(prune_error(o).find("--heads lists head 1 of layer 0 twice"), std::string::npos);
  o.heads_list = R"({"1": [0], "01": [2]})";
  EXPECT_NE(prune_error(o).find("--heads lists layer 1 twice"), std::string::npos);
  o = {};
  o.layers = "0,0";
  EXPECT_NE(prune_error(o).find("--layers lists layer 0 twice"), std::string::npos);
}

TEST(TachPrune, FamiliesWithoutARuleAreRefusedByName) {
  PruneOptions o;
  o.model = test::fixtures_dir() + "/encoders/mpnet-cls2-f32";
  o.heads = 0.25;
  const std::string mpnet = prune_error(o);
  EXPECT_NE(mpnet.find("MPNet encoders (all-mpnet-base-v2) cannot be written with fewer attention heads: its "
                       "relative position bias is one table for every layer's heads"),
            std::string::npos)
      << mpnet;
  o.heads = 0;
  o.ffn = 0.25;  // MPNet's FFN has a rule
  EXPECT_EQ(prune_error(o), "");
  o = {};
  o.model = test::fixtures_dir() + "/decoders/modernbert-cls-mean-f32";
  o.heads = 0.25;
  const std::string modernbert = prune_error(o);
  EXPECT_NE(modernbert.find("ModernBERT encoders (gte-modernbert, modernbert-embed) cannot be written with fewer "
                            "attention heads: its config.json has no head_dim"),
            std::string::npos)
      << modernbert;
}

}  // namespace
}  // namespace tach
