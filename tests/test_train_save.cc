// Saving: a fine-tuned model round-trips through the loader tach classify uses, a failed write
// (a full disk, simulated with RLIMIT_FSIZE) leaves the previous model untouched and no
// temporary behind, and gradient accumulation matches one large batch.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "tach/model.h"
#include "tach/train.h"
#include "test_util.h"
#include "train/save_model.h"
#include "train/training_model.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

TrainOptions tiny_options(const std::string& runs) {
  TrainOptions o;
  o.model = test::fixtures_dir() + "/encoders/bert-cls2-f32";
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.runs_dir = runs;
  o.lr = 1e-3;
  o.shuffle = false;
  o.dropout = false;
  return o;
}

// Trains `model` for two epochs on the tiny data set, saves it, and checks that the saved weights
// are the trained ones: reloaded both ways, the inference engine's logits equal the training
// engine's forward (dropout off).
void expect_saved_model_classifies_as_trained(const std::string& model, const std::string& architecture) {
  test::TempDir dir;
  TrainOptions o = tiny_options(dir.path());
  o.model = model;
  o.epochs = 2;
  o.batch_size = 8;
  const TrainResult r = run_training(o);
  ASSERT_FALSE(r.saved_model.empty());
  auto inference = load_model(r.saved_model, {});
  train::TrainingModelSource src = train::open_training_model(r.saved_model, 0);
  const auto m = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  const TokenBatch batch =
      m->uses_token_types() ? TokenBatch::from_rows({{1, 6, 8, 2}, {1, 3, 4, 5, 2}}, 0, {{0, 0, 0, 0}, {0, 0, 0, 0, 0}})
                            : TokenBatch::from_rows({{1, 6, 8, 2}, {1, 3, 4, 5, 2}}, 0);
  const Tensor a = inference->classify(batch);
  const auto state = m->new_state(false);
  m->forward(*state, batch, {});
  ASSERT_EQ(a.numel(), state->logits.numel());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], state->logits.data<float>()[i], 1e-4);
  std::ifstream in(r.saved_model + "/config.json");
  const auto config = nlohmann::json::parse(in);
  EXPECT_EQ(config["architectures"][0], architecture);
  EXPECT_EQ(config["id2label"]["1"], "LABEL_1");
  EXPECT_TRUE(fs::exists(r.saved_model + "/tokenizer.json"));
}

TEST(TrainSave, SavedModelLoadsAndClassifiesAsTrained) {
  expect_saved_model_classifies_as_trained(test::fixtures_dir() + "/encoders/bert-cls2-f32",
                                           "BertForSequenceClassification");
}

TEST(TrainSave, SavedQwen2LoadsAndClassifiesAsTrained) {
  expect_saved_model_classifies_as_trained(test::fixtures_dir() + "/decoders/qwen2-cls-kv1-f32",
                                           "Qwen2ForSequenceClassification");
}

TEST(TrainSave, FullDiskKeepsThePreviousModel) {
  test::TempDir dir;
  train::TrainingModelSource src = train::open_training_model(test::fixtures_dir() + "/encoders/bert-cls2-f32", 0);
  const auto model = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  train::TrainableModel& m = *model;
  const std::string out = dir.file("model");
  train::save_hf_model(out, m, src.config_json, "single_label_classification", "");
  const auto before = fs::file_size(out + "/model.safetensors");
  m.params.entries().front().value.data<float>()[0] += 1.0f;  // a different model to save over it

  // Files may not grow past 4 KiB: every write beyond fails with EFBIG, as a full disk fails with
  // ENOSPC. SIGXFSZ is ignored so the write returns the error instead of killing the test.
  struct rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  setrlimit(RLIMIT_FSIZE, &small);
  const std::string err = test::error_of([&] { train::save_hf_model(out, m, src.config_json, "", ""); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);

  EXPECT_NE(err.find("write failed"), std::string::npos) << err;
  EXPECT_EQ(fs::file_size(out + "/model.safetensors"), before);
  const auto reread = model::SafetensorsFile::open(out + "/model.safetensors");  // still valid
  EXPECT_EQ(reread.header().entries.size(), m.params.entries().size());
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string(), "model") << "left behind: " << e.path();
}

TEST(TrainSave, GradientAccumulationMatchesOneLargerBatch) {
  test::TempDir dir;
  TrainOptions big = tiny_options(dir.path());
  big.max_samples = 16;
  big.epochs = 1;
  big.batch_size = 4;
  big.run_id = "big";
  TrainOptions acc = big;
  acc.batch_size = 2;
  acc.grad_accumulation = 2;
  acc.run_id = "acc";
  const TrainResult a = run_training(big), b = run_training(acc);
  ASSERT_EQ(a.steps, 4);
  ASSERT_EQ(b.steps, 4);
  const auto fa = model::SafetensorsFile::open(a.saved_model + "/model.safetensors");
  const auto fb = model::SafetensorsFile::open(b.saved_model + "/model.safetensors");
  for (const auto& e : fa.header().entries) {
    if (e.name.find("key.bias") != std::string::npos) continue;  // zero gradient: rounding noise (test_train_golden)
    const Tensor x = fa.tensor(e), y = fb.tensor(*fb.find(e.name));
    double num = 0, den = 1e-30;
    for (int64_t i = 0; i < x.numel(); ++i) {
      num = std::max(num, double(std::fabs(x.data<float>()[i] - y.data<float>()[i])));
      den = std::max(den, double(std::fabs(x.data<float>()[i])));
    }
    EXPECT_LT(num / den, 1e-5) << e.name;
  }
}

// --dtype bf16 runs mixed precision end to end: the run says so in config.json, ends at nearly
// the f32 run's loss, and its weights are not the f32 run's (the GEMMs did round).
TEST(TrainSave, Bf16RunRecordsItsPrecisionAndTrains) {
  test::TempDir dir;
  TrainOptions f32 = tiny_options(dir.path());
  f32.epochs = 2;
  f32.run_id = "f32";
  TrainOptions bf16 = f32;
  bf16.dtype = "bf16";
  bf16.run_id = "bf16";
  const TrainResult a = run_training(f32), b = run_training(bf16);
  std::ifstream in(b.run_dir + "/config.json");
  const auto config = nlohmann::json::parse(in);
  EXPECT_EQ(config["precision"]["dtype"], "bf16");
  EXPECT_NE(config["precision"]["gemm"].get<std::string>().find("bf16"), std::string::npos);
  ASSERT_EQ(a.epochs.size(), 2u);
  ASSERT_EQ(b.epochs.size(), 2u);
  EXPECT_NEAR(b.epochs.back().train_loss, a.epochs.back().train_loss, 0.05 * std::fabs(a.epochs.back().train_loss));
  const auto fa = model::SafetensorsFile::open(a.saved_model + "/model.safetensors");
  const auto fb = model::SafetensorsFile::open(b.saved_model + "/model.safetensors");
  const auto& e = *fa.find("classifier.weight");
  const Tensor x = fa.tensor(e), y = fb.tensor(*fb.find(e.name));
  double diff = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    diff = std::max(diff, double(std::fabs(x.data<float>()[i] - y.data<float>()[i])));
  EXPECT_GT(diff, 0.0);
}

// Multi-label: a bare encoder gets a head over the labels of every example's set, learns the
// tiny set with BCE-with-logits, and saves problem_type multi_label_classification, which the
// inference side reads back (sigmoid scores).
TEST(TrainSave, MultiLabelTrainsSavesAndReloads) {
  test::TempDir dir;
  TrainOptions o = tiny_options(dir.path());
  o.model = test::fixtures_dir() + "/encoders/bert-base-model-f32";
  o.data.path = test::fixtures_dir() + "/train/tiny_multilabel.jsonl";
  o.data.label_column = "labels";
  o.eval_data.path = o.data.path;
  o.problem_type = "multi_label_classification";
  o.lr = 5e-3;
  o.epochs = 30;
  o.batch_size = 4;
  const TrainResult r = run_training(o);
  ASSERT_EQ(r.epochs.size(), 30u);
  EXPECT_LT(r.epochs.back().train_loss, 0.5 * r.epochs.front().train_loss);
  EXPECT_TRUE(r.epochs.back().evaluated);
  EXPECT_GE(r.epochs.back().eval_accuracy, 0.75);  // exact-match over the 8 sets
  std::ifstream in(r.saved_model + "/config.json");
  const auto config = nlohmann::json::parse(in);
  EXPECT_EQ(config["problem_type"], "multi_label_classification");
  EXPECT_EQ(config["id2label"]["0"], "greeting");
  EXPECT_EQ(config["id2label"]["1"], "place");
  EXPECT_EQ(load_model(r.saved_model, {})->info().problem_type, "multi_label_classification");
}

}  // namespace
}  // namespace tach
