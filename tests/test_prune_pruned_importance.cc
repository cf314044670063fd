// tach prune --by importance on a checkpoint that already has pruned_heads (tach prune's own output):
// each layer is built with the heads it kept, and their scores land at their original indices.
//
// The reference is the same model written back at full width, the removed heads' query, key and
// value rows (and biases) and attention-output columns all zero: such a head's context is zero, so
// the forward and the loss are the pruned model's, every kept head's gate gradient is the same (up
// to the GEMMs' rounding over the extra zero columns), and a zeroed head scores exactly 0. The
// pruned model's scores must be those, with null where a head was removed before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/prune.h"
#include "test_util.h"

namespace tach {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// `w` [rows, cols] as f32 with zero rows (by_rows) or zero columns inserted where `pruned` heads
// were, each head `width` rows or columns wide: [heads * width, cols] or [rows, heads * width].
Tensor widen(const Tensor& stored, const std::vector<int64_t>& pruned, int64_t heads, int64_t width, bool by_rows) {
  const Tensor w = stored.to(DType::f32, MemoryCategory::weights).contiguous();
  const bool vector = w.dim() == 1;  // a bias: widened as rows
  const int64_t rows = w.size(0), cols = vector ? 1 : w.size(1);
  const int64_t out_rows = by_rows ? heads * width : rows, out_cols = by_rows ? cols : heads * width;
  Tensor out = Tensor::zeros(vector ? Shape{out_rows} : Shape{out_rows, out_cols}, DType::f32, Device::cpu(),
                             MemoryCategory::weights);
  int64_t kept = 0;
  for (int64_t h = 0; h < heads; ++h) {
    if (std::find(pruned.begin(), pruned.end(), h) != pruned.end()) continue;
    for (int64_t i = 0; i < width; ++i) {
      const int64_t from = kept * width + i, to = h * width + i;
      if (by_rows) std::copy_n(w.data<float>() + from * cols, cols, out.data<float>() + to * out_cols);
      else
        for (int64_t r = 0; r < rows; ++r) out.data<float>()[r * out_cols + to] = w.data<float>()[r * cols + from];
    }
    ++kept;
  }
  return out;
}

// bert-pruned written at full width into `dir`, its removed heads zero, config.json without pruned_heads.
void write_full_width(const std::string& pruned_dir, const std::string& dir) {
  nlohmann::json config = read_json(pruned_dir + "/config.json");
  const nlohmann::json pruned_heads = config["pruned_heads"];
  config.erase("pruned_heads");
  const int64_t heads = config["num_attention_heads"], width = int64_t(config["hidden_size"]) / heads;
  const model::WeightStore store = model::open_checkpoint_weights(pruned_dir);
  std::vector<std::pair<std::string, Tensor>> tensors;
  const std::string prefix = "bert.encoder.layer.";
  for (const std::string& name : store.names()) {
    Tensor t = store.find(name)->load().to(DType::f32, MemoryCategory::weights).contiguous();
    if (name.rfind(prefix, 0) == 0) {
      const std::string tail = name.substr(prefix.size());
      const std::string layer = tail.substr(0, tail.find('.')), role = tail.substr(tail.find('.') + 1);
      const std::vector<int64_t> removed =
          pruned_heads.contains(layer) ? pruned_heads[layer].get<std::vector<int64_t>>() : std::vector<int64_t>{};
      if (role.rfind("attention.self.", 0) == 0) t = widen(t, removed, heads, width, true);
      if (role == "attention.output.dense.weight") t = widen(t, removed, heads, width, false);
    }
    tensors.emplace_back(name, t);
  }
  std::filesystem::create_directories(dir);
  model::write_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
  std::ofstream(dir + "/config.json") << config.dump(2);
}

// prune_scores.json of `model` ranked by importance on tiny.csv, nothing removed.
nlohmann::json importance_of(const std::string& model, const std::string& output) {
  PruneOptions o;
  o.model = model;
  o.output = output;
  o.by = "importance";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.calibration_samples = 20;
  EXPECT_TRUE(prune_model(o).unchanged);
  return read_json(output + "/prune_scores.json");
}

TEST(PrunedModelImportance, KeptHeadsScoreAsAtFullWidthWithTheRemovedOnesZero) {
  test::TempDir tmp;
  const std::string pruned = test::fixtures_dir() + "/prune/bert-pruned";  // {"0": [1, 3], "1": [2]}
  write_full_width(pruned, tmp.file("full"));
  const nlohmann::json got = importance_of(pruned, tmp.file("scored"));
  const nlohmann::json want = importance_of(tmp.file("full"), tmp.file("scored-full"));
  const nlohmann::json removed = nlohmann::json::parse(R"({"0": [1, 3], "1": [2]})");
  ASSERT_EQ(got["heads"].size(), 2u);
  double largest = 0;
  for (const auto& layer : want["heads"])
    for (const auto& s : layer) largest = std::max(largest, s.get<double>());
  ASSERT_GT(largest, 0);
  for (size_t l = 0; l < 2; ++l) {
    const auto gone = removed[std::to_string(l)].get<std::vector<int64_t>>();
    ASSERT_EQ(got["heads"][l].size(), 4u);
    for (int64_t h = 0; h < 4; ++h) {
      const nlohmann::json& g = got["heads"][l][size_t(h)];
      const double w = want["heads"][l][size_t(h)].get<double>();
      if (std::find(gone.begin(), gone.end(), h) != gone.end()) {
        EXPECT_TRUE(g.is_null()) << "layer " << l << " head " << h << " was removed before: " << g;
        EXPECT_EQ(w, 0.0) << "a zeroed head's context is zero";
      } else {
        ASSERT_TRUE(g.is_number()) << "layer " << l << " head " << h;
        EXPECT_GT(w, 0.0);
        EXPECT_NEAR(g.get<double>(), w, 1e-4 * largest) << "layer " << l << " head " << h;
      }
    }
  }
  for (size_t l = 0; l < 2; ++l) {
    EXPECT_NEAR(got["layers"][l].get<double>(), want["layers"][l].get<double>(),
                1e-4 * std::fabs(want["layers"][l].get<double>()));
    for (size_t j = 0; j < want["neurons"][l].size(); ++j)
      EXPECT_NEAR(got["neurons"][l][j].get<double>(), want["neurons"][l][j].get<double>(),
                  1e-4 * std::fabs(want["neurons"][l][j].get<double>()) + 1e-9);
  }
  EXPECT_EQ(got["calibration"]["rows"], want["calibration"]["rows"]);
  EXPECT_NEAR(got["calibration"]["mean_loss"].get<double>(), want["calibration"]["mean_loss"].get<double>(), 1e-5);
}

// A second pruning by importance removes only heads that are left, and lists both runs' heads.
TEST(PrunedModelImportance, PrunesAgainOnlyTheHeadsLeft) {
  test::TempDir tmp;
  for (const char* by : {"importance", "magnitude"}) {
    PruneOptions o;
    o.model = test::fixtures_dir() + "/prune/bert-pruned";
    o.output = tmp.file(std::string("again-") + by);
    o.by = by;
    if (o.by == "importance") {
      o.data.path = test::fixtures_dir() + "/train/tiny.csv";
      o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
    }
    o.heads = 0.4;  // of each layer's heads left: round(0.8) = 1 of layer 0's 2, round(1.2) = 1 of layer 1's 3
    const PruneResult r = prune_model(o);
    EXPECT_EQ(r.before.heads, 5) << by;
    EXPECT_EQ(r.after.heads, 3) << by;
    const nlohmann::json config = read_json(o.output + "/config.json");
    const nlohmann::json pruned_before = nlohmann::json::parse(R"({"0": [1, 3], "1": [2]})");
    for (const auto& [layer, before] : pruned_before.items()) {
      const auto now = config["pruned_heads"][layer].get<std::vector<int64_t>>();
      EXPECT_EQ(now.size(), before.size() + 1) << by << " layer " << layer;
      for (int64_t h : before.get<std::vector<int64_t>>())
        EXPECT_NE(std::find(now.begin(), now.end(), h), now.end()) << by << " layer " << layer;
    }
    EXPECT_EQ(o.by == "importance", !r.calibration.empty()) << by;
  }
}

}  // namespace
}  // namespace tach
