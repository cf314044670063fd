// LoRA adapters written by peft, run by tach's inference engine (--adapter, merged at load) and
// written out merged (tach merge): the logits match peft's PeftModel and merge_and_unload()
// (scripts/golden/make_adapter_logits.py), and adapters that do not fit are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "model/peft_adapter.h"
#include "tach/merge.h"
#include "tach/model.h"
#include "tach/train.h"
#include "test_util.h"
#include "train_fixtures.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

const std::map<std::string, std::string> kBases = {{"distilbert-cls2-f32", "encoders/distilbert-cls2-f32"},
                                                   {"bert-cls2-f32", "encoders/bert-cls2-f32"},
                                                   {"qwen2-cls-kv1-f32", "decoders/qwen2-cls-kv1-f32"},
                                                   {"llama-cls-bias-f32", "decoders/llama-cls-bias-f32"},
                                                   {"gemma3-cls-f32", "decoders/gemma3-cls-f32"}};

std::string adapter_dir(const std::string& c) { return test::fixtures_dir() + "/lora/" + c + "/adapter_init"; }
std::string base_dir(const std::string& c) { return test::fixtures_dir() + "/" + kBases.at(c); }

std::vector<TokenBatch> batches_of(const std::string& c) {
  std::vector<TokenBatch> batches;
  std::vector<train::Targets> targets;
  test::load_batches(test::fixtures_dir() + "/train/" + c + "/batches.json", false, &batches, &targets);
  return batches;
}

nlohmann::json expected_of(const std::string& c) {
  std::ifstream in(test::fixtures_dir() + "/lora/" + c + "/adapter_logits.json");
  return nlohmann::json::parse(in);
}

// max |tach - reference| over every batch's logits.
double max_error(const Model& m, const std::vector<TokenBatch>& batches, const nlohmann::json& reference) {
  double err = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    const Tensor logits = m.classify(batches[b]);
    const auto& ref = reference[b];
    EXPECT_EQ(logits.size(0), int64_t(ref.size()));
    for (int64_t i = 0; i < logits.size(0); ++i)
      for (int64_t j = 0; j < logits.size(1); ++j)
        err = std::max(err, std::fabs(double(logits.data<float>()[i * logits.size(1) + j]) - ref[i][j].get<double>()));
  }
  return err;
}

std::unique_ptr<Model> load_with(const std::string& model, const std::string& adapter) {
  LoadOptions lo;
  lo.adapter = adapter;
  return load_model(model, lo);
}

class AdapterFixture : public ::testing::TestWithParam<std::string> {};

// tach classify --adapter: the adapter merged at load gives peft's logits.
TEST_P(AdapterFixture, LogitsMatchPeft) {
  const std::string c = GetParam();
  auto m = load_with(base_dir(c), adapter_dir(c));
  const auto batches = batches_of(c);
  const nlohmann::json expected = expected_of(c);
  const double err = max_error(*m, batches, expected["logits"]);
  EXPECT_LT(err, 1e-4) << c;
  bool noted = false;
  for (const auto& n : m->info().notes) noted = noted || n.find("merged into the weights at load") != std::string::npos;
  EXPECT_TRUE(noted) << "the model's notes say the adapter was merged";
  // And the adapter changes them: the base alone is further off.
  auto base = load_model(base_dir(c), LoadOptions{});
  EXPECT_GT(max_error(*base, batches, expected["logits"]), 1e-2) << c;
}

// tach merge writes a plain checkpoint whose logits are peft's merge_and_unload's, and tach's own
// with --adapter.
TEST_P(AdapterFixture, MergeWritesAPlainCheckpoint) {
  const std::string c = GetParam();
  test::TempDir dir;
  MergeOptions o;
  o.model = base_dir(c);
  o.adapter = adapter_dir(c);
  o.output = dir.path() + "/merged";
  const MergeResult r = merge_adapter(o);
  EXPECT_GT(r.merged_weights, 0);
  EXPECT_GT(r.head_tensors, 0);  // modules_to_save: the classifier (and DistilBERT's pre_classifier)
  EXPECT_TRUE(fs::exists(o.output + "/config.json"));
  auto merged = load_model(o.output, LoadOptions{});
  EXPECT_TRUE(merged->info().notes.empty() || merged->info().notes[0].find("unexpected") == std::string::npos);
  const auto batches = batches_of(c);
  EXPECT_LT(max_error(*merged, batches, expected_of(c)["merged_logits"]), 1e-4) << c;
}

INSTANTIATE_TEST_SUITE_P(Peft, AdapterFixture,
                         ::testing::Values("distilbert-cls2-f32", "bert-cls2-f32", "qwen2-cls-kv1-f32",
                                           "llama-cls-bias-f32", "gemma3-cls-f32"));

// An adapter made for another base model is refused, naming both.
TEST(Adapter, ForAnotherBaseModelIsRefused) {
  const std::string err =
      test::error_of([&] { load_with(base_dir("bert-cls2-f32"), adapter_dir("distilbert-cls2-f32")); });
  EXPECT_NE(err.find("was made for base model"), std::string::npos) << err;
  EXPECT_NE(err.find("does not fit '" + base_dir("bert-cls2-f32") + "'"), std::string::npos) << err;
  const std::string merge_err = test::error_of([&] {
    test::TempDir dir;
    MergeOptions o;
    o.model = base_dir("qwen2-cls-kv1-f32");
    o.adapter = adapter_dir("distilbert-cls2-f32");
    o.output = dir.path() + "/out";
    merge_adapter(o);
  });
  EXPECT_NE(merge_err.find("was made for base model"), std::string::npos) << merge_err;
}

// A copy of the DistilBERT fixture's adapter in dir/name with `edit` applied to its config.
std::string edited_adapter(const test::TempDir& dir, const std::string& name,
                           const std::function<void(nlohmann::json&)>& edit) {
  std::string a = dir.path() + "/" + name;
  fs::copy(adapter_dir("distilbert-cls2-f32"), a);
  std::ifstream in(a + "/adapter_config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  in.close();
  edit(config);
  std::ofstream(a + "/adapter_config.json") << config.dump();
  return a;
}

// The error loading an adapter whose config `edit` changed.
std::string error_with_config(const std::function<void(nlohmann::json&)>& edit) {
  test::TempDir dir;
  const std::string a = edited_adapter(dir, "a", edit);
  return test::error_of([&] { load_with(base_dir("distilbert-cls2-f32"), a); });
}

TEST(Adapter, BadConfigsAreRefused) {
  EXPECT_NE(error_with_config([](auto& c) { c["r"] = 0; }).find("\"r\" must be an integer of at least 1"),
            std::string::npos);
  EXPECT_NE(error_with_config([](auto& c) { c["lora_alpha"] = -4; }).find("\"lora_alpha\" must be positive"),
            std::string::npos);
  EXPECT_NE(error_with_config([](auto& c) { c["peft_type"] = "IA3"; }).find("tach reads LoRA adapters"),
            std::string::npos);
  EXPECT_NE(error_with_config([](auto& c) { c["use_dora"] = true; }).find("DoRA"), std::string::npos);
  // The rank the config says must be the tensors' rank.
  EXPECT_NE(error_with_config([](auto& c) { c["r"] = 8; }).find("has rank 4 in adapter_model.safetensors but 8"),
            std::string::npos);
}

// A damaged adapter file gets the checkpoint's validation: a clear error, nothing loaded.
TEST(Adapter, CorruptFilesAreRefused) {
  test::TempDir dir;
  const std::string a = dir.path() + "/a";
  fs::copy(adapter_dir("distilbert-cls2-f32"), a);
  const std::string file = a + "/adapter_model.safetensors";
  fs::resize_file(file, fs::file_size(file) - 100);
  const std::string err = test::error_of([&] { load_with(base_dir("distilbert-cls2-f32"), a); });
  EXPECT_NE(err.find("adapter_model.safetensors"), std::string::npos) << err;
  fs::remove(file);
  const std::string missing = test::error_of([&] { load_with(base_dir("distilbert-cls2-f32"), a); });
  EXPECT_NE(missing.find("adapter_model.safetensors: not found"), std::string::npos) << missing;
  const std::string nodir = test::error_of([&] { load_with(base_dir("distilbert-cls2-f32"), dir.path() + "/none"); });
  EXPECT_NE(nodir.find("adapter_config.json: cannot open"), std::string::npos) << nodir;
}

// rsLoRA scales by alpha / sqrt(r): with r = 4 that is twice alpha / r, so doubling alpha in a
// plain adapter must give the same merged model as switching rsLoRA on.
TEST(Adapter, RsLoraScalesByTheSquareRootOfTheRank) {
  test::TempDir dir;
  auto variant = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    return load_with(base_dir("distilbert-cls2-f32"), edited_adapter(dir, name, edit));
  };
  auto rs = variant("rs", [](auto& c) { c["use_rslora"] = true; });
  auto doubled = variant("double", [](auto& c) { c["lora_alpha"] = c["lora_alpha"].template get<double>() * 2; });
  const auto batches = batches_of("distilbert-cls2-f32");
  const Tensor a = rs->classify(batches[0]), b = doubled->classify(batches[0]);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-6);
}

// tach train --adapter continues a peft adapter: the run starts from its weights and options.
TEST(Adapter, TrainingContinuesFromAPeftAdapter) {
  test::TempDir dir;
  TrainOptions o;
  o.model = base_dir("distilbert-cls2-f32");
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.method = "lora";
  o.adapter = adapter_dir("distilbert-cls2-f32");
  o.lora_r = 16;  // replaced by the adapter's 4
  o.max_steps = 1;
  o.lr = 1e-12;  // the weights barely move: what is saved is the adapter that was read
  o.dropout = false;
  o.runs_dir = dir.path();
  o.run_id = "cont";
  const TrainResult r = run_training(o);
  auto before = model::PeftAdapter::open(o.adapter);
  auto after = model::PeftAdapter::open(r.saved_model);
  EXPECT_EQ(after->r(), 4);
  EXPECT_EQ(after->target_modules(), before->target_modules());
  auto m0 = load_with(o.model, o.adapter), m1 = load_with(o.model, r.saved_model);
  const auto batches = batches_of("distilbert-cls2-f32");
  const Tensor a = m0->classify(batches[0]), b = m1->classify(batches[0]);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5);
  // full fine-tuning has no adapter to continue
  o.method = "full";
  EXPECT_NE(test::error_of([&] { run_training(o); }).find("needs --method lora"), std::string::npos);
}

// The Python with torch, transformers and peft (development only): $TACH_REF_PYTHON, else
// ~/tach-ref/bin/python; empty when neither can import them.
std::string reference_python() {
  const char* named = std::getenv("TACH_REF_PYTHON");
  const char* home = std::getenv("HOME");
  std::string py = named != nullptr ? named : "";
  if (py.empty() && home != nullptr) py = std::string(home) + "/tach-ref/bin/python";
  if (py.empty() || !fs::exists(py)) return "";
  const std::string probe = "'" + py + "' -c 'import torch, transformers, peft' > /dev/null 2>&1";
  return std::system(probe.c_str()) == 0 ? py : "";
}

// peft's own PeftModel.from_pretrained loads the adapter tach train wrote and computes the same
// logits as tach with --adapter. Runs peft itself; skips where it is not installed.
TEST(Adapter, PeftLoadsTachsAdapterWithTheSameLogits) {
  const std::string py = reference_python();
  if (py.empty()) GTEST_SKIP() << "needs a Python with torch, transformers and peft (set TACH_REF_PYTHON)";
  test::TempDir dir;
  TrainOptions o;
  o.model = base_dir("distilbert-cls2-f32");
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.runs_dir = dir.path();
  o.method = "lora";
  o.lora_r = 4;
  o.lora_alpha = 16;
  o.lr = 1e-2;
  o.epochs = 2;
  o.batch_size = 4;
  const TrainResult r = run_training(o);
  const auto batches = batches_of("distilbert-cls2-f32");
  auto m = load_with(o.model, r.saved_model);
  const Tensor logits = m->classify(batches[0]);
  nlohmann::json batch = {{"input_ids", nlohmann::json::array()}, {"attention_mask", nlohmann::json::array()}};
  for (int64_t i = 0; i < batches[0].batch(); ++i) {
    const int32_t* ids = batches[0].input_ids.data<int32_t>() + i * batches[0].seq_len();
    const int32_t* mask = batches[0].attention_mask.data<int32_t>() + i * batches[0].seq_len();
    batch["input_ids"].push_back(std::vector<int32_t>(ids, ids + batches[0].seq_len()));
    batch["attention_mask"].push_back(std::vector<int32_t>(mask, mask + batches[0].seq_len()));
  }
  std::ofstream(dir.path() + "/batch.json") << batch.dump();
  std::ofstream(dir.path() + "/peft_logits.py")
      << "import json, sys, torch\n"
         "from transformers import AutoModelForSequenceClassification\n"
         "from peft import PeftModel\n"
         "base, adapter, batch, out = sys.argv[1:5]\n"
         "m = AutoModelForSequenceClassification.from_pretrained(base, attn_implementation='eager').float().eval()\n"
         "pm = PeftModel.from_pretrained(m, adapter).eval()\n"
         "b = json.load(open(batch))\n"
         "with torch.no_grad():\n"
         "    y = pm(input_ids=torch.tensor(b['input_ids']), attention_mask=torch.tensor(b['attention_mask'])).logits\n"
         "json.dump(y.tolist(), open(out, 'w'))\n";
  const std::string cmd = "'" + py + "' '" + dir.path() + "/peft_logits.py' '" + o.model + "' '" + r.saved_model +
                          "' '" + dir.path() + "/batch.json' '" + dir.path() + "/peft.json' > '" + dir.path() +
                          "/peft.log' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "peft failed; see the log: " << cmd;
  std::ifstream in(dir.path() + "/peft.json");
  const nlohmann::json peft = nlohmann::json::parse(in);
  ASSERT_EQ(int64_t(peft.size()), logits.size(0));
  for (int64_t i = 0; i < logits.size(0); ++i)
    for (int64_t j = 0; j < logits.size(1); ++j)
      EXPECT_NEAR(logits.data<float>()[i * logits.size(1) + j], peft[i][j].get<double>(), 1e-4) << i << "," << j;
}

}  // namespace
}  // namespace tach
