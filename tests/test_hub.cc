// Downloads from the Hub, against a fake hub on 127.0.0.1 (tests/fake_hub.h): the cache layout
// huggingface_hub uses, what is fetched (and what never is), and each fault: a dropped
// connection (resumed), a wrong checksum, a gated repo, a missing file, a slow server, offline
// mode, two downloads of one file at once. Nothing here reaches the internet.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "fake_hub.h"
#include "model/hub.h"
#include "model/hub_dataset_layout.h"
#include "model/hub_files.h"
#include "tach/dataset.h"
#include "tach/error.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;
using model::HubRepo;
using model::HubSettings;

const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

test::FakeRepo tiny_repo(const std::string& id = "org/tiny") {
  const std::string base = test::fixtures_dir() + "/encoders/bert-base-model-f32/";
  test::FakeRepo r;
  r.id = id;
  r.commit = kCommit;
  r.files["config.json"] = test::read_text(base + "config.json");
  r.files["model.safetensors"] = test::read_text(base + "model.safetensors");  // 35 KB: served as LFS
  r.files["tokenizer.json"] = test::read_text(test::fixtures_dir() + "/tokenizers/tiny-wordpiece/tokenizer.json");
  r.files["modules.json"] =
      R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
          {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
          {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  r.files["1_Pooling/config.json"] = R"({"word_embedding_dimension": 16, "pooling_mode_cls_token": true})";
  r.files["pytorch_model.bin"] = std::string(2048, 'P');  // a pickle: never fetched
  r.files["README.md"] = "# tiny\n";
  return r;
}

HubSettings settings_for(const test::FakeHub& hub, const test::TempDir& cache) {
  HubSettings s;
  s.endpoint = hub.endpoint();
  s.cache_dir = cache.path();
  s.token_file = cache.file("token");
  s.progress_bar = false;
  s.etag_timeout_s = 5;
  s.download_timeout_s = 5;
  return s;
}

HubRepo repo(const std::string& id = "org/tiny", const std::string& rev = "main") {
  HubRepo r;
  r.id = id;
  r.revision = rev;
  return r;
}

std::string blob_sha(const std::string& bytes) { return model::sha256_of_bytes(bytes); }

TEST(Hub, DownloadsWhatTachReadsIntoTheHuggingFaceCacheLayout) {
  test::FakeHub hub;
  const auto r = tiny_repo();
  hub.add(r);
  test::TempDir cache;
  const std::string snap = model::hub_download_model(repo(), settings_for(hub, cache));
  const fs::path storage = fs::path(cache.path()) / "models--org--tiny";
  EXPECT_EQ(snap, (storage / "snapshots" / kCommit).string());
  EXPECT_EQ(test::read_text((storage / "refs" / "main").string()), kCommit);
  // Snapshots hold relative links into blobs/, named by ETag: sha256 for LFS, git blob id otherwise.
  const fs::path weights = storage / "snapshots" / kCommit / "model.safetensors";
  ASSERT_TRUE(fs::is_symlink(weights));
  EXPECT_EQ(fs::read_symlink(weights).string(), "../../blobs/" + blob_sha(r.files.at("model.safetensors")));
  EXPECT_EQ(fs::read_symlink(storage / "snapshots" / kCommit / "config.json").string(),
            "../../blobs/" + model::git_blob_sha1_of_bytes(r.files.at("config.json")));
  EXPECT_EQ(test::read_text(weights.string()), r.files.at("model.safetensors"));
  EXPECT_TRUE(fs::exists(storage / "snapshots" / kCommit / "1_Pooling" / "config.json"));
  EXPECT_EQ(fs::read_symlink(storage / "snapshots" / kCommit / "1_Pooling" / "config.json").string(),
            "../../../blobs/" + model::git_blob_sha1_of_bytes(r.files.at("1_Pooling/config.json")));
  // Only what tach reads: never the pickle, not the README.
  EXPECT_EQ(hub.count("GET /org/tiny/resolve/" + std::string(kCommit) + "/pytorch_model.bin"), 0);
  EXPECT_EQ(hub.count("HEAD /org/tiny/resolve/" + std::string(kCommit) + "/pytorch_model.bin"), 0);
  EXPECT_FALSE(fs::exists(storage / "snapshots" / kCommit / "pytorch_model.bin"));
  EXPECT_FALSE(fs::exists(storage / "snapshots" / kCommit / "README.md"));
  for (const auto& e : fs::directory_iterator(storage / "blobs"))
    EXPECT_EQ(e.path().extension(), "") << "left behind: " << e.path();
}

TEST(Hub, LoadModelFetchesAHubIdThatIsNotCachedThenUsesTheCache) {
  test::FakeHub hub;
  hub.add(tiny_repo());
  test::TempDir cache;
  ::setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
  ::setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
  ::setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1", 1);
  auto m = load_model("org/tiny");
  EXPECT_EQ(m->info().pooling, "cls");
  EXPECT_TRUE(m->info().normalized);
  EXPECT_NE(m->info().source.find(kCommit), std::string::npos);
  const int before = int(hub.requests().size());
  auto again = load_model("org/tiny");  // cached: the Hub is not asked again
  EXPECT_EQ(int(hub.requests().size()), before);
  // Offline, the cache serves it and nothing is contacted.
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  auto offline = load_model("org/tiny");
  EXPECT_EQ(int(hub.requests().size()), before);
  // Offline and not cached: an error naming the setting, and still nothing contacted.
  EXPECT_NE(test::error_of([] { load_model("org/other"); }).find("HF_HUB_OFFLINE is set"), std::string::npos);
  EXPECT_EQ(int(hub.requests().size()), before);
  ::unsetenv("HF_HUB_OFFLINE");
  ::unsetenv("HF_ENDPOINT");
  ::unsetenv("HF_HUB_CACHE");
}

TEST(Hub, ADroppedConnectionResumesOnTheNextRun) {
  test::FakeHub hub;
  const auto r = tiny_repo();
  hub.add(r);
  test::TempDir cache;
  HubSettings s = settings_for(hub, cache);
  s.retries = 0;
  hub.drop_after = 10000;
  hub.drops_left = 1;
  const std::string err = test::error_of([&] { model::hub_download_model(repo(), s); });
  EXPECT_NE(err.find("run again to resume"), std::string::npos) << err;
  const fs::path blob =
      fs::path(cache.path()) / "models--org--tiny" / "blobs" / blob_sha(r.files.at("model.safetensors"));
  ASSERT_TRUE(fs::exists(blob.string() + ".incomplete"));
  EXPECT_EQ(fs::file_size(blob.string() + ".incomplete"), 10000u);
  EXPECT_FALSE(fs::exists(blob));
  model::hub_download_model(repo(), s);
  EXPECT_EQ(test::read_text(blob.string()), r.files.at("model.safetensors"));
  EXPECT_FALSE(fs::exists(blob.string() + ".incomplete"));
  bool resumed = false;
  for (const auto& range : hub.ranges()) resumed |= range == "bytes=10000-";
  EXPECT_TRUE(resumed) << "the second run asks for the rest only";
}

TEST(Hub, ADroppedConnectionIsRetriedWithinOneRun) {
  test::FakeHub hub;
  const auto r = tiny_repo();
  hub.add(r);
  test::TempDir cache;
  HubSettings s = settings_for(hub, cache);
  s.retries = 2;
  hub.drop_after = 5000;
  hub.drops_left = 2;
  const std::string snap = model::hub_download_model(repo(), s);
  EXPECT_EQ(test::read_text(snap + "/model.safetensors"), r.files.at("model.safetensors"));
}

TEST(Hub, AWrongChecksumIsRefusedAndNothingHalfWrittenStays) {
  test::FakeHub hub;
  const auto r = tiny_repo();
  hub.add(r);
  test::TempDir cache;
  hub.corrupt_left = 1;
  const HubSettings s = settings_for(hub, cache);
  const std::string err = test::error_of([&] { model::hub_download_model(repo(), s); });
  EXPECT_NE(err.find("do not match"), std::string::npos) << err;
  const fs::path storage = fs::path(cache.path()) / "models--org--tiny";
  // The corrupted file (the first fetched, config.json) is neither cached nor linked nor kept.
  if (fs::exists(storage / "blobs")) {
    for (const auto& e : fs::directory_iterator(storage / "blobs"))
      EXPECT_NE(e.path().filename().string(), model::git_blob_sha1_of_bytes(r.files.at("config.json")));
  }
  EXPECT_FALSE(fs::exists(storage / "snapshots" / kCommit / "config.json"));
  EXPECT_FALSE(fs::exists(storage / "refs" / "main"));
  for (const auto& e : fs::recursive_directory_iterator(cache.path()))
    EXPECT_EQ(e.path().string().find(".incomplete"), std::string::npos) << e.path();
  // The next run, with good bytes, completes.
  EXPECT_NO_THROW(model::hub_download_model(repo(), s));
}

TEST(Hub, AGatedRepoWithoutATokenSaysWhichVariablesToSet) {
  test::FakeHub hub;
  auto r = tiny_repo("org/gated");
  r.token = "hf_secret";
  hub.add(r);
  test::TempDir cache;
  HubSettings s = settings_for(hub, cache);
  const std::string err = test::error_of([&] { model::hub_download_model(repo("org/gated"), s); });
  EXPECT_NE(err.find("401"), std::string::npos) << err;
  EXPECT_NE(err.find("gated or private"), std::string::npos) << err;
  EXPECT_NE(err.find("HF_TOKEN"), std::string::npos) << err;
  EXPECT_NE(err.find(cache.file("token")), std::string::npos) << err;
  s.token = "hf_wrong";
  EXPECT_NE(test::error_of([&] { model::hub_download_model(repo("org/gated"), s); }).find("not allowed"),
            std::string::npos);
  s.token = "hf_secret";
  EXPECT_NO_THROW(model::hub_download_model(repo("org/gated"), s));
  // The token file is read when HF_TOKEN is unset.
  test::write_text(cache.file("token"), "hf_secret\n");
  ::setenv("HF_TOKEN_PATH", cache.file("token").c_str(), 1);
  ::unsetenv("HF_TOKEN");
  EXPECT_EQ(HubSettings::from_environment().token, "hf_secret");
  ::unsetenv("HF_TOKEN_PATH");
}

TEST(Hub, AMissingFileOrRepoIsNamed) {
  test::FakeHub hub;
  hub.add(tiny_repo());
  test::TempDir cache;
  const HubSettings s = settings_for(hub, cache);
  model::HubFile f;
  f.path = "no_such_file.json";
  const std::string err = test::error_of([&] { model::hub_download_file(repo(), kCommit, f, s); });
  EXPECT_NE(err.find("file 'no_such_file.json' not found (404"), std::string::npos) << err;
  EXPECT_NE(test::error_of([&] { model::hub_download_model(repo("org/absent"), s); }).find("not found (404"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { model::hub_download_model(repo("org/tiny", "v9"), s); }).find("not found (404"),
            std::string::npos);
}

TEST(Hub, ASlowServerTimesOutAtTheConfiguredLimit) {
  test::FakeHub hub;
  hub.add(tiny_repo());
  test::TempDir cache;
  HubSettings s = settings_for(hub, cache);
  s.download_timeout_s = 1;
  s.retries = 0;
  hub.stall_ms = 4000;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = test::error_of([&] { model::hub_download_model(repo(), s); });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(err.find("HF_HUB_DOWNLOAD_TIMEOUT"), std::string::npos) << err;
  EXPECT_LT(took, 3.5) << "gave up after " << took << " s with a 1 s limit";
  ::setenv("HF_HUB_DOWNLOAD_TIMEOUT", "2.5", 1);
  EXPECT_EQ(HubSettings::from_environment().download_timeout_s, 2.5);
  ::setenv("HF_HUB_DOWNLOAD_TIMEOUT", "soon", 1);
  EXPECT_NE(test::error_of([] { HubSettings::from_environment(); }).find("HF_HUB_DOWNLOAD_TIMEOUT='soon'"),
            std::string::npos);
  ::unsetenv("HF_HUB_DOWNLOAD_TIMEOUT");
}

TEST(Hub, TwoDownloadsOfOneFileEndWithOneGoodCopy) {
  test::FakeHub hub;
  const auto r = tiny_repo();
  hub.add(r);
  test::TempDir cache;
  const HubSettings s = settings_for(hub, cache);
  model::HubFile f;
  f.path = "model.safetensors";
  hub.stall_ms = 300;  // the first holds the lock while the second arrives
  std::string a, b, ea, eb;
  std::thread t1([&] { ea = test::error_of([&] { a = model::hub_download_file(repo(), kCommit, f, s); }); });
  std::thread t2([&] { eb = test::error_of([&] { b = model::hub_download_file(repo(), kCommit, f, s); }); });
  t1.join();
  t2.join();
  EXPECT_EQ(ea, "(no error)");
  EXPECT_EQ(eb, "(no error)");
  EXPECT_EQ(a, b);
  EXPECT_EQ(test::read_text(a), r.files.at("model.safetensors"));
  EXPECT_EQ(hub.count("GET /cdn/"), 1) << "the second waited for the lock and found the blob";
}

TEST(Hub, ShardedWeightsFetchTheIndexAndEveryShard) {
  test::FakeHub hub;
  test::FakeRepo r;
  r.id = "org/sharded";
  r.commit = kCommit;
  r.files["config.json"] = R"({"model_type": "bert"})";
  r.files["model.safetensors.index.json"] =
      R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
  r.files["model-00001-of-00002.safetensors"] = std::string(3000, 'a');
  r.files["model-00002-of-00002.safetensors"] = std::string(3000, 'b');
  r.files["model-00003-of-00003.safetensors"] = std::string(3000, 'c');  // not in the index: not fetched
  hub.add(r);
  test::TempDir cache;
  const std::string snap = model::hub_download_model(repo("org/sharded"), settings_for(hub, cache));
  EXPECT_TRUE(fs::exists(snap + "/model-00001-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(snap + "/model-00002-of-00002.safetensors"));
  EXPECT_FALSE(fs::exists(snap + "/model-00003-of-00003.safetensors"));
  HubSettings s = settings_for(hub, cache);
  EXPECT_EQ(model::hub_cached_model(repo("org/sharded"), s), snap);
}

TEST(Hub, APickleOnlyRepoIsRefusedWithoutFetchingIt) {
  test::FakeHub hub;
  test::FakeRepo r;
  r.id = "org/pickled";
  r.commit = kCommit;
  r.files["config.json"] = R"({"model_type": "bert"})";
  r.files["pytorch_model.bin"] = std::string(4096, 'P');
  hub.add(r);
  test::TempDir cache;
  const std::string err =
      test::error_of([&] { model::hub_download_model(repo("org/pickled"), settings_for(hub, cache)); });
  EXPECT_NE(err.find("pytorch_model.bin, PyTorch pickles, which tach never fetches"), std::string::npos) << err;
  EXPECT_EQ(hub.count("GET /cdn/"), 0);
}

TEST(Hub, DatasetFilesComeThroughTheSamePath) {
  test::FakeHub hub;
  test::FakeRepo r;
  r.type = "dataset";
  r.id = "org/reviews";
  r.commit = kCommit;
  r.files["data/train.csv"] = "text,label\ngood film,pos\nbad film,neg\n";
  r.files["README.md"] = "# reviews\n";
  hub.add(r);
  test::FakeRepo pq;
  pq.type = "dataset";
  pq.id = "org/parquet";
  pq.commit = kCommit;
  pq.files["data/train-00000.parquet"] = std::string(2000, 'Q');
  hub.add(pq);
  test::TempDir cache;
  ::setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
  ::setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
  DatasetOptions d;
  d.path = "hf://datasets/org/reviews";  // the one CSV/JSONL file it holds
  const Dataset ds = read_dataset(d);
  ASSERT_EQ(ds.examples.size(), 2u);
  EXPECT_EQ(ds.examples[1].label, "neg");
  EXPECT_TRUE(fs::exists(cache.path() + "/datasets--org--reviews/snapshots/" + kCommit + "/data/train.csv"));
  d.path = "hf://datasets/org/parquet";  // not Parquet: 2000 bytes of 'Q'
  EXPECT_NE(test::error_of([&] { read_dataset(d); }).find("not a Parquet file"), std::string::npos);
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  d.path = "hf://datasets/org/reviews/data/train.csv";
  const int before = int(hub.requests().size());
  EXPECT_EQ(read_dataset(d).examples.size(), 2u);
  EXPECT_EQ(int(hub.requests().size()), before);
  ::unsetenv("HF_HUB_OFFLINE");
  ::unsetenv("HF_ENDPOINT");
  ::unsetenv("HF_HUB_CACHE");
}

// nyu-mll/glue's layout: CONFIG/SPLIT-00000-of-0000N.parquet, written by `datasets`.
test::FakeRepo glue_repo() {
  test::FakeRepo r;
  r.type = "dataset";
  r.id = "nyu-mll/glue";
  r.commit = kCommit;
  const std::string dir = test::fixtures_dir() + "/parquet/";
  r.files["sst2/validation-00000-of-00001.parquet"] = test::read_text(dir + "sst2-validation.parquet");
  r.files["sst2/train-00000-of-00002.parquet"] = test::read_text(dir + "sst2-train.parquet");
  r.files["sst2/train-00001-of-00002.parquet"] = test::read_text(dir + "sst2-test-gzip.parquet");
  r.files["cola/validation-00000-of-00001.parquet"] = test::read_text(dir + "sst2-validation.parquet");
  r.files["README.md"] = "# glue\n";
  return r;
}

TEST(Hub, NamedParquetDatasetsReadTheirSplitFromTheHubsFilesThenFromTheCacheOffline) {
  test::FakeHub hub;
  hub.add(glue_repo());
  test::TempDir cache;
  ::setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
  ::setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
  DatasetOptions d;
  d.path = "glue/sst2";  // as workflows name it: the canonical name and the configuration
  d.text_column = "sentence";
  d.split = "validation";
  const Dataset v = read_dataset(d);
  EXPECT_EQ(v.format, "parquet");
  EXPECT_EQ(v.examples.size(), 24u);
  EXPECT_EQ(v.label_names, (std::vector<std::string>{"negative", "positive"}));
  EXPECT_NE(v.path.find("hf://datasets/nyu-mll/glue/sst2"), std::string::npos) << v.path;
  d.split = "train";  // two shards, read in order as one split
  const Dataset t = read_dataset(d);
  ASSERT_EQ(t.examples.size(), 40u + 16u);
  EXPECT_EQ(t.examples[40].source_row, 41);
  d.split = "";
  EXPECT_NE(
      test::error_of([&] { read_dataset(d); }).find("holds the splits train, validation; choose one with --split"),
      std::string::npos);
  d.split = "test";
  EXPECT_NE(test::error_of([&] { read_dataset(d); }).find("no split 'test'; the splits are train, validation"),
            std::string::npos);
  d.path = "glue";
  d.split = "validation";
  EXPECT_NE(test::error_of([&] { read_dataset(d); }).find("is in several configurations (cola, sst2)"),
            std::string::npos);
  // tach download glue/sst2 --split train: both shards, in order.
  const auto shards = download_dataset_files("glue/sst2", "train");
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_NE(shards[0].find("sst2/train-00000-of-00002.parquet"), std::string::npos) << shards[0];
  // Offline, the cached snapshot's files answer without a request.
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  const int before = int(hub.requests().size());
  d.path = "glue/sst2";
  EXPECT_EQ(read_dataset(d).examples.size(), 24u);
  d.path = "hf://datasets/nyu-mll/glue/sst2";
  d.split = "train";
  EXPECT_EQ(read_dataset(d).examples.size(), 56u);
  EXPECT_EQ(int(hub.requests().size()), before);
  d.path = "glue/cola";  // never fetched: its file is not in the cache
  EXPECT_NE(test::error_of([&] { read_dataset(d); }).find("holds no CSV, TSV, JSON, JSONL or Parquet file under cola/"),
            std::string::npos);
  ::unsetenv("HF_HUB_OFFLINE");
  ::unsetenv("HF_ENDPOINT");
  ::unsetenv("HF_HUB_CACHE");
}

TEST(HubDatasetLayout, SplitsAndNames) {
  EXPECT_EQ(model::split_of_data_file("sst2/validation-00000-of-00001.parquet"), "validation");
  EXPECT_EQ(model::split_of_data_file("mnli/test_matched-00000-of-00001.parquet"), "test_matched");
  EXPECT_EQ(model::split_of_data_file("sst2/validation/0000.parquet"), "validation");
  EXPECT_EQ(model::split_of_data_file("data/train.csv"), "train");
  EXPECT_EQ(model::named_dataset_spec("glue/sst2", false), "hf://datasets/nyu-mll/glue/sst2");
  EXPECT_EQ(model::named_dataset_spec("imdb", false), "hf://datasets/stanfordnlp/imdb");
  EXPECT_EQ(model::named_dataset_spec("org/name", false), std::nullopt) << "a local-looking path stays a path";
  EXPECT_EQ(model::named_dataset_spec("org/name/config", true), "hf://datasets/org/name/config");
  EXPECT_EQ(model::named_dataset_spec("../data/x", true), std::nullopt);
}

}  // namespace
}  // namespace tach
