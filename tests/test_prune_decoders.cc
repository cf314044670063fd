// tach prune for the decoder families and ModernBERT: the scores, the units removed, config.json
// and the pruned model's logits against the same pruning done in PyTorch and run by transformers
// (scripts/golden/make_prune_decoder_fixtures.py), and what is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "golden_check.h"
#include "model/decoder_config.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/prune.h"
#include "prune_scores_check.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using test::expect_scores_near;
using test::read_json;

std::string decoder_fixture(const std::string& name) { return test::fixtures_dir() + "/decoders/" + name; }

// A copy of a fixture whose config.json lacks layer_types, as hub configs written before
// transformers saved it (ModernBERT's global_attn_every_n_layers decides the kinds then).
std::string without_layer_types(const std::string& source, const std::string& dir) {
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(source))
    fs::copy_file(entry.path(), dir + "/" + entry.path().filename().string());
  json config = read_json(dir + "/config.json");
  config.erase("layer_types");
  std::ofstream(dir + "/config.json") << config.dump(2);
  return dir;
}

class PrunedDecoder : public ::testing::TestWithParam<std::string> {};

// Each family pruned as the golden says: the magnitudes and the units removed equal PyTorch's,
// config.json has the sizes (and layer_types) transformers read, and the pruned model's logits,
// right- and left-padded, equal transformers' on the same pruned checkpoint.
TEST_P(PrunedDecoder, MatchesTransformersOnThePrunedCheckpoint) {
  const std::string golden_path = test::fixtures_dir() + "/prune/" + GetParam() + "-pruned.json";
  const json want = read_json(golden_path);
  test::TempDir tmp;
  PruneOptions o;
  o.model = decoder_fixture(want["source"].get<std::string>());
  if (want["strip_layer_types"].get<bool>()) o.model = without_layer_types(o.model, tmp.file("source"));
  o.output = tmp.file("pruned");
  const json& opts = want["options"];
  o.heads = opts.value("heads", 0.0);
  o.ffn = opts.value("ffn", 0.0);
  o.layers = opts.value("layers", "");
  const PruneResult r = prune_model(o);

  const json scores = read_json(o.output + "/prune_scores.json");
  expect_scores_near(scores["heads"], want["head_magnitude"], "key/value groups");
  expect_scores_near(scores["neurons"], want["neuron_magnitude"], "neurons");
  expect_scores_near(scores["layers"], want["layer_magnitude"], "layers");
  EXPECT_EQ(scores["head_unit"], "key/value group");
  EXPECT_EQ(scores["removed_layers"], want["removed_layers"]);
  EXPECT_EQ(scores["removed_heads"], want["removed_groups"]);
  const json config = read_json(o.output + "/config.json");
  for (const auto& [key, value] : want["config"].items()) EXPECT_EQ(config[key], value) << key;
  if (!want["config"].contains("layer_types")) { EXPECT_FALSE(config.contains("layer_types")); }
  EXPECT_EQ(r.after.layers, want["config"]["num_hidden_layers"].get<int64_t>());
  EXPECT_EQ(r.after.ffn_width, want["config"]["intermediate_size"].get<int64_t>());
  EXPECT_LT(r.after.parameters, r.before.parameters);
  EXPECT_LT(r.after.flops_per_token, r.before.flops_per_token);
  EXPECT_EQ(read_json(o.output + "/prune_summary.json")["after"]["parameters"], r.after.parameters);

  fs::copy_file(golden_path, o.output + "/expected.json");
  auto model = load_model(o.output);
  test::check_decoder_classifier_against_transformers(*model, o.output);
}

INSTANTIATE_TEST_SUITE_P(Families, PrunedDecoder,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma3", "modernbert"));

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Nothing removed (a fraction that rounds to no group, or no option) copies the files as they are.
TEST(PruneDecoders, RemovingNothingCopiesTheFiles) {
  test::TempDir tmp;
  for (const char* name : {"llama-cls-bias-f32", "modernbert-cls-mean-f32"}) {
    PruneOptions o;
    o.model = decoder_fixture(name);
    o.output = tmp.file(name);
    o.heads = std::string(name).rfind("llama", 0) == 0 ? 0.2 : 0;  // 0.4 of 2 groups: none
    const PruneResult r = prune_model(o);
    EXPECT_TRUE(r.unchanged) << name;
    for (const char* f : {"config.json", "model.safetensors"})
      EXPECT_EQ(file_bytes(o.output + "/" + f), file_bytes(o.model + "/" + f)) << name << " " << f;
  }
}

// --heads rounds to whole key/value groups, and says so.
TEST(PruneDecoders, AFractionRoundsToWholeGroupsAndSaysSo) {
  test::TempDir tmp;
  PruneOptions o;
  o.model = decoder_fixture("llama-cls-bias-f32");  // 4 heads, 2 key/value heads, 3 layers
  o.output = tmp.file("out");
  o.heads = 0.3;
  const PruneResult r = prune_model(o);
  EXPECT_EQ(r.removed_heads, 6);  // one group of 2 query heads in each of 3 layers
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("--heads 0.3 rounds to whole key/value groups: 1 of 2 per layer (2 of 4 query heads)"),
            std::string::npos)
      << r.notes[0];
  EXPECT_EQ(read_json(o.output + "/config.json")["num_attention_heads"], 2);
}

std::string prune_error(PruneOptions o) {
  test::TempDir tmp;
  o.output = tmp.file("out");
  try {
    prune_model(o);
  } catch (const Error& e) {
    EXPECT_FALSE(fs::exists(o.output)) << "nothing is written on an error";
    return e.what();
  }
  return "";
}

TEST(PruneDecoders, WhatCannotBeWrittenIsRefusedByName) {
  PruneOptions o;
  o.model = decoder_fixture("qwen2-cls-kv1-f32");  // one key/value head for all 4 query heads
  o.heads = 0.5;
  EXPECT_NE(prune_error(o).find("--heads 0.5 removes all 1 key/value groups of each layer (4 query heads share each "
                                "key/value head); a layer keeps at least one group"),
            std::string::npos);
  o.model = decoder_fixture("llama-cls-bias-f32");
  o.heads = 0;
  o.heads_list = R"({"0": [1]})";
  EXPECT_NE(prune_error(o).find("--heads takes a fraction for Llama decoders (Llama 2/3.x, SmolLM2, TinyLlama), not "
                                "a list: config.json has one num_attention_heads and num_key_value_heads"),
            std::string::npos);
  o = {};
  o.model = decoder_fixture("modernbert-cls-mean-f32");
  o.heads = 0.25;
  EXPECT_NE(prune_error(o).find("ModernBERT encoders (gte-modernbert, modernbert-embed) cannot be written with fewer "
                                "attention heads: its config.json has no head_dim"),
            std::string::npos);
  o.heads = 0;
  o.layers = "0,2";
  EXPECT_NE(prune_error(o).find("--layers lists layer 0, which ModernBERT encoders (gte-modernbert, modernbert-embed) "
                                "keep: transformers builds layer 0 without an attention norm"),
            std::string::npos);
  o.layers = "4";
  EXPECT_NE(prune_error(o).find("--layers 4 removes every layer; the model has 4"), std::string::npos);
}

// A count of layers to remove never picks ModernBERT's layer 0, whatever its score.
TEST(PruneDecoders, ModernBertKeepsLayerZero) {
  test::TempDir tmp;
  PruneOptions o;
  o.model = decoder_fixture("modernbert-cls-mean-f32");
  o.output = tmp.file("out");
  o.layers = "3";
  prune_model(o);
  EXPECT_EQ(read_json(o.output + "/prune_scores.json")["removed_layers"], json::parse("[1, 2, 3]"));
  const json config = read_json(o.output + "/config.json");
  EXPECT_EQ(config["layer_types"], json::parse(R"(["full_attention"])"));
  auto model = load_model(o.output);
  EXPECT_EQ(model->classify(test::padded_batch({{5, 17, 33}, {9, 88}}, 0, false)).size(1), 3);
}

// A Qwen2 config in the hub's spelling (sliding from max_window_layers on, no layer_types): removing
// layer 0 would make the sliding layer 1 full at its new index 0, so layer_types is written.
TEST(PruneDecoders, AKeptLayerKeepsItsKindWhereTheRuleWouldMoveIt) {
  test::TempDir tmp;
  const std::string source = without_layer_types(decoder_fixture("qwen2-cls-kv1-f32"), tmp.file("source"));
  json config = read_json(source + "/config.json");
  config["use_sliding_window"] = true;
  config["sliding_window"] = 4;
  config["max_window_layers"] = 1;  // layer 0 full, layer 1 sliding
  std::ofstream(source + "/config.json") << config.dump(2);
  PruneOptions o;
  o.model = source;
  o.output = tmp.file("out");
  o.layers = "0,";
  const PruneResult r = prune_model(o);
  EXPECT_EQ(read_json(o.output + "/config.json")["layer_types"], json::parse(R"(["sliding_attention"])"));
  EXPECT_EQ(model::load_decoder_config(o.output + "/config.json").layer_window, (std::vector<int64_t>{4}));
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("config.json gains layer_types"), std::string::npos) << r.notes[0];
  // Removing layer 1 instead leaves layer 0 full under the rule: nothing to add.
  o.layers = "1,";
  o.output = tmp.file("out2");
  EXPECT_TRUE(prune_model(o).notes.empty());
  EXPECT_FALSE(read_json(o.output + "/config.json").contains("layer_types"));
}

// ModernBERT's layer_types may make local a layer its global_attn_every_n_layers rule would not
// (a pruned model's layer 0 of 1): the window is local_attention's.
TEST(PruneDecoders, ModernBertReadsALocalLayerTheRuleWouldNotMake) {
  const model::DecoderConfig c = model::parse_decoder_config_text(
      R"({"model_type": "modernbert", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
          "num_hidden_layers": 2, "intermediate_size": 16, "local_attention": 6, "global_attn_every_n_layers": 3,
          "layer_types": ["full_attention", "sliding_attention"]})",
      "config.json");
  EXPECT_EQ(c.layer_window, (std::vector<int64_t>{0, 3}));
  const model::DecoderConfig one = model::parse_decoder_config_text(
      R"({"model_type": "modernbert", "vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2,
          "num_hidden_layers": 1, "intermediate_size": 16, "local_attention": 6,
          "layer_types": ["sliding_attention"]})",
      "config.json");
  EXPECT_EQ(one.layer_window, (std::vector<int64_t>{3}));
}

}  // namespace
}  // namespace tach
