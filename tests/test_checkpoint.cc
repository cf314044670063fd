#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "model/checkpoint.h"
#include "tach/error.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach::model {
namespace {

namespace fs = std::filesystem;

using test::error_of;

// A copy of a committed fixture, to break in one way per test.
std::string copy_fixture(const test::TempDir& dir, const std::string& name) {
  std::string dst = dir.file(name);
  fs::copy(test::fixtures_dir() + "/encoders/" + name, dst, fs::copy_options::recursive);
  return dst;
}

// Every tensor of a checkpoint directory, as raw f32 parts to write a modified copy from.
std::vector<test::FakeTensor> checkpoint_tensors(const std::string& dir) {
  const WeightStore store = open_checkpoint_weights(dir);
  std::vector<test::FakeTensor> out;
  for (const auto& name : store.names()) {
    const Tensor t = store.find(name)->load();
    const auto* p = static_cast<const uint8_t*>(t.raw());
    out.push_back({name, "F32", t.shape(), std::vector<uint8_t>(p, p + t.nbytes())});
  }
  return out;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { had_ ? (void)setenv(name_, old_.c_str(), 1) : (void)unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(Resolve, PresetAndLocal) {
  EXPECT_EQ(resolve_model("preset:bert-tiny").kind, ModelLocation::Kind::preset);
  const auto loc = resolve_model(test::fixtures_dir() + "/encoders/bert-cls2-f32");
  EXPECT_EQ(loc.kind, ModelLocation::Kind::local);
}

TEST(Resolve, HubCacheLayout) {
  test::TempDir cache;
  const std::string repo = cache.file("models--acme--tiny-bert");
  fs::create_directories(repo + "/refs");
  for (const char* snap : {"/snapshots/abc123", "/snapshots/def456"}) {
    fs::create_directories(repo + snap);
    test::write_text(repo + snap + "/config.json", "{}");  // a snapshot is complete with a config and weights
    test::write_text(repo + snap + "/model.safetensors", "");
  }
  test::write_text(repo + "/refs/main", "abc123\n");
  test::write_text(repo + "/refs/v2", "def456");
  ScopedEnv env("HF_HUB_CACHE", cache.path());
  ScopedEnv offline("HF_HUB_OFFLINE", "1");  // never the network from a test (test_hub.cc has a fake hub)
  EXPECT_EQ(hf_hub_cache_dir(), cache.path());
  ModelLocation loc = resolve_model("acme/tiny-bert");
  EXPECT_EQ(loc.kind, ModelLocation::Kind::hub);
  EXPECT_EQ(loc.revision, "abc123");
  EXPECT_EQ(loc.dir, repo + "/snapshots/abc123");
  EXPECT_EQ(resolve_model("acme/tiny-bert@v2").revision, "def456");
  EXPECT_EQ(resolve_model("acme/tiny-bert@def456").revision, "def456");  // a commit given directly
  const std::string err = error_of([] { resolve_model("acme/other-model"); });
  EXPECT_NE(err.find("models--acme--other-model/refs/main"), std::string::npos) << err;
  EXPECT_NE(err.find("HF_HUB_OFFLINE is set"), std::string::npos) << err;
  // A snapshot without its weights is not taken for the model.
  fs::remove(repo + "/snapshots/def456/model.safetensors");
  EXPECT_NE(error_of([] { resolve_model("acme/tiny-bert@v2"); }).find("no complete snapshot"), std::string::npos);
}

TEST(Resolve, HfHomeFallback) {
  test::TempDir home;
  unsetenv("HF_HUB_CACHE");
  ScopedEnv env("HF_HOME", home.path());
  EXPECT_EQ(hf_hub_cache_dir(), home.path() + "/hub");
}

TEST(Resolve, MissingDirectorySaysWhere) {
  const std::string err = error_of([] { resolve_model("./no/such/model"); });
  EXPECT_NE(err.find("no such directory"), std::string::npos) << err;
}

TEST(Checkpoint, PickleOnlyIsRefusedWithReason) {
  test::TempDir dir;
  test::write_text(dir.file("pytorch_model.bin"), "not read");
  const std::string err = error_of([&] { open_checkpoint_weights(dir.path()); });
  EXPECT_NE(err.find("only safetensors"), std::string::npos) << err;
  EXPECT_NE(err.find("arbitrary code"), std::string::npos) << err;
}

TEST(Checkpoint, ShardedIndex) {
  test::TempDir dir;
  test::write_file(dir.file("model-00001-of-00002.safetensors"), test::safetensors_bytes({{"a", "F32", {2}, {}}}));
  test::write_file(dir.file("model-00002-of-00002.safetensors"),
                   test::safetensors_bytes({{"b", "F16", {3}, {}}, {"c", "F32", {1}, {}}}));
  test::write_text(dir.file("model.safetensors.index.json"),
                   R"({"metadata":{"total_size":18},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
                   R"("b":"model-00002-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})");
  WeightStore store = open_checkpoint_weights(dir.path());
  EXPECT_EQ(store.size(), 3u);
  ASSERT_NE(store.find("b"), nullptr);
  EXPECT_EQ(store.find("b")->dtype, DType::f16);
  EXPECT_EQ(store.find("c")->file, "model-00002-of-00002.safetensors");
  EXPECT_EQ(store.find("a")->load().numel(), 2);
}

TEST(Checkpoint, ShardedIndexDisagreements) {
  test::TempDir dir;
  test::write_file(dir.file("s1.safetensors"), test::safetensors_bytes({{"a", "F32", {2}, {}}}));
  test::write_text(dir.file("model.safetensors.index.json"),
                   R"({"weight_map":{"a":"s1.safetensors","z":"s2.safetensors"}})");
  EXPECT_NE(error_of([&] { open_checkpoint_weights(dir.path()); }).find("shard s2.safetensors is missing"),
            std::string::npos);
  test::write_text(dir.file("model.safetensors.index.json"),
                   R"({"weight_map":{"a":"s1.safetensors","q":"s1.safetensors"}})");
  EXPECT_NE(error_of([&] { open_checkpoint_weights(dir.path()); }).find("'q' is listed"), std::string::npos);
  test::write_text(dir.file("model.safetensors.index.json"), R"({"weight_map":{"a":"../etc/passwd"}})");
  EXPECT_NE(error_of([&] { open_checkpoint_weights(dir.path()); }).find("not a file in the model directory"),
            std::string::npos);
  test::write_text(dir.file("model.safetensors.index.json"), R"({"weight_map":)");
  EXPECT_NE(error_of([&] { open_checkpoint_weights(dir.path()); }).find("not valid JSON"), std::string::npos);
}

TEST(Load, ShapeDisagreeingWithConfigNamesBoth) {
  test::TempDir dir;
  const std::string m = copy_fixture(dir, "bert-cls2-f32");
  // Claim three labels while the checkpoint's classifier has two.
  std::string cfg = test::read_text(m + "/config.json");
  cfg.replace(cfg.find("\"model_type\""), 0,
              "\"num_labels\": 3, \"id2label\": {\"0\":\"a\",\"1\":\"b\",\"2\":\"c\"}, ");
  test::write_text(m + "/config.json", cfg);
  const std::string err = error_of([&] { load_model(m); });
  EXPECT_NE(err.find("tensor 'classifier.weight' has shape [2, 16]"), std::string::npos) << err;
  EXPECT_NE(err.find("needs [3, 16]"), std::string::npos) << err;
}

TEST(Load, MissingTensorNamesPrefixesTried) {
  test::TempDir dir;
  const std::string m = copy_fixture(dir, "bert-cls2-f32");
  // Rewrite the checkpoint without one tensor.
  std::vector<test::FakeTensor> kept;
  for (auto& t : checkpoint_tensors(m))
    if (t.name != "bert.encoder.layer.1.output.dense.bias") kept.push_back(std::move(t));
  test::write_file(m + "/model.safetensors", test::safetensors_bytes(kept));
  const std::string err = error_of([&] { load_model(m); });
  EXPECT_NE(err.find("missing tensor 'encoder.layer.1.output.dense.bias'"), std::string::npos) << err;
  EXPECT_NE(err.find("name prefixes tried: 'bert.', none"), std::string::npos) << err;  // the family row's prefix only
}

TEST(Load, UnexpectedTensorIsAnError) {
  test::TempDir dir;
  const std::string m = copy_fixture(dir, "distilbert-cls2-f32");
  std::vector<test::FakeTensor> all = checkpoint_tensors(m);
  all.push_back({"distilbert.transformer.layer.7.ffn.lin1.weight", "F32", {2, 2}, {}});
  test::write_file(m + "/model.safetensors", test::safetensors_bytes(all));
  const std::string err = error_of([&] { load_model(m); });
  EXPECT_NE(err.find("unexpected tensor"), std::string::npos) << err;
  EXPECT_NE(err.find("distilbert.transformer.layer.7.ffn.lin1.weight"), std::string::npos) << err;
}

TEST(Load, BareArchitectureWithTrainedHeadLoadsTheHead) {
  // distilbert-base-uncased-finetuned-sst-2-english's config names DistilBertModel; its
  // checkpoint has the classifier. The head must be used, and the user told.
  test::TempDir dir;
  const std::string m = copy_fixture(dir, "distilbert-cls2-f32");
  std::string cfg = test::read_text(m + "/config.json");
  const auto pos = cfg.find("DistilBertForSequenceClassification");
  ASSERT_NE(pos, std::string::npos);
  cfg.replace(pos, std::string("DistilBertForSequenceClassification").size(), "DistilBertModel");
  test::write_text(m + "/config.json", cfg);
  auto model = load_model(m);
  EXPECT_TRUE(model->info().classifier);
  ASSERT_FALSE(model->info().notes.empty());
  EXPECT_NE(model->info().notes[0].find("loaded as a sequence classifier"), std::string::npos);
}

TEST(Load, PresetsAreDeterministic) {
  auto a = load_model("preset:bert-tiny", {.seed = 7});
  auto b = load_model("preset:bert-tiny", {.seed = 7});
  auto c = load_model("preset:bert-tiny", {.seed = 8});
  TokenBatch batch = TokenBatch::from_rows({{101, 2000, 3000, 102}}, 0);
  Tensor la = a->classify(batch), lb = b->classify(batch), lc = c->classify(batch);
  EXPECT_EQ(la.data<float>()[0], lb.data<float>()[0]);
  EXPECT_NE(la.data<float>()[0], lc.data<float>()[0]);
  EXPECT_EQ(a->info().parameters, 4386178);  // bert-tiny with a 2-label head, as transformers counts it
  EXPECT_NE(error_of([] { load_model("preset:gpt5"); }).find("preset:distilbert-base-uncased"), std::string::npos);
}

TEST(Load, BadBatchesAreClearErrors) {
  auto m = load_model("preset:bert-tiny");
  EXPECT_NE(error_of([&] {
              m->classify(TokenBatch::from_rows({{101, 40000}}, 0));
            }).find("input_ids[0][1] = 40000"),
            std::string::npos);
  std::vector<int32_t> long_row(513, 1000);
  EXPECT_NE(error_of([&] { m->classify(TokenBatch::from_rows({long_row}, 0)); }).find("exceeds the model's 512"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              m->classify(TokenBatch::from_rows({{101, 5}}, 0, {{0, 2}}));
            }).find("token types"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_model("preset:bert-tiny", {.device = Device::cuda(0)}); }).find("cuda:0"),
            std::string::npos);
}

}  // namespace
}  // namespace tach::model
