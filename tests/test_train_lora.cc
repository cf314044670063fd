// LoRA on the training engine against peft + transformers + torch (scripts/golden/
// make_lora_fixtures.py): with the same adapter weights (peft's save_pretrained, loaded by tach),
// every trainable gradient on one padded batch, and 20 AdamW steps; the base stays frozen.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "test_util.h"
#include "train_fixtures.h"
#include "train/classifier_loss.h"
#include "train/grad_norm.h"
#include "model/family.h"
#include "train/lora.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "tach/train.h"
#include "train/training_model.h"

namespace tach {
namespace {

const std::map<std::string, std::string> kModels = {{"distilbert-cls2-f32", "encoders/distilbert-cls2-f32"},
                                                    {"bert-cls2-f32", "encoders/bert-cls2-f32"},
                                                    {"roberta-cls2-f32", "encoders/roberta-cls2-f32"},
                                                    {"mpnet-cls2-f32", "encoders/mpnet-cls2-f32"},
                                                    {"qwen2-cls-kv1-f32", "decoders/qwen2-cls-kv1-f32"},
                                                    {"llama-cls-bias-f32", "decoders/llama-cls-bias-f32"},
                                                    {"gemma3-cls-f32", "decoders/gemma3-cls-f32"},
                                                    {"modernbert-cls-mean-f32", "decoders/modernbert-cls-mean-f32"}};

struct LoraCase {
  train::TrainingModelSource source;
  std::unique_ptr<train::TrainableModel> model;
  std::vector<TokenBatch> batches;
  std::vector<train::Targets> targets;
  nlohmann::json expected;
  std::string dir;
};

LoraCase load(const std::string& name) {
  LoraCase c;
  c.dir = test::fixtures_dir() + "/lora/" + name;
  std::ifstream e(c.dir + "/expected.json");
  c.expected = nlohmann::json::parse(e);
  c.source = train::open_training_model(test::fixtures_dir() + "/" + kModels.at(name), 0);
  c.model = train::build_trainable_model(c.source, c.source.id2label(), c.source.problem_type(), 0, nullptr);
  train::LoraOptions o;
  o.r = c.expected["r"].get<int64_t>();
  o.alpha = c.expected["lora_alpha"].get<float>();
  o.target_modules = c.expected["target_modules"].get<std::vector<std::string>>();
  o.modules_to_save = c.expected["modules_to_save"].get<std::vector<std::string>>();
  train::attach_lora(*c.model, o, 0);
  train::load_peft_adapter_weights(*c.model, c.dir + "/adapter_init");
  test::load_batches(test::fixtures_dir() + "/train/" + name + "/batches.json", false, &c.batches, &c.targets);
  return c;
}

double forward_backward(LoraCase& c, train::ForwardState& state, size_t i) {
  return test::forward_backward(*c.model, state, c.batches[i], c.targets[i]);
}

using test::tensor_error;

class LoraFixture : public ::testing::TestWithParam<std::string> {};

// The trainable set is peft's (adapters and the modules to save), every other parameter is
// frozen with no gradient kept, and each trainable gradient matches peft's within 1e-4.
TEST_P(LoraFixture, TrainableSetAndGradientsMatchPeft) {
  LoraCase c = load(GetParam());
  std::vector<std::string> trainable;
  for (const auto& p : c.model->params.entries()) {
    if (p.trainable) trainable.push_back(p.name);
    else EXPECT_FALSE(p.grad.defined()) << p.name << " is frozen but keeps a gradient";
  }
  std::vector<std::string> want = c.expected["trainable"].get<std::vector<std::string>>();
  std::sort(trainable.begin(), trainable.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(trainable, want);
  for (bool fused : {false, true}) {
    const auto state = c.model->new_state(fused);
    c.model->params.zero_grad();
    const double loss = forward_backward(c, *state, 0);
    EXPECT_NEAR(loss, c.expected["loss0"].get<double>(), 1e-5 * std::max(1.0, std::fabs(loss)));
    const auto ref = model::SafetensorsFile::open(c.dir + "/grads.safetensors");
    for (const auto& e : ref.header().entries) {
      const train::Parameter* p = c.model->params.find(e.name);
      ASSERT_NE(p, nullptr) << e.name;
      EXPECT_LT(tensor_error(p->grad, ref.tensor(e)), 1e-4) << e.name << (fused ? " (fused)" : "");
    }
  }
}

TEST_P(LoraFixture, TwentyAdamWStepsMatchPeft) {
  LoraCase c = load(GetParam());
  const nlohmann::json& x = c.expected;
  train::AdamWConfig config;
  config.weight_decay = x["weight_decay"].get<float>();
  train::AdamWOptimizer opt(c.model->params, config, train::DecayScope::trainer);
  train::LinearSchedule schedule{x["lr"].get<double>(), x["warmup"].get<int64_t>(), x["steps"].get<int64_t>(), true};
  const auto state = c.model->new_state(false);
  for (int64_t step = 0; step < x["steps"].get<int64_t>(); ++step) {
    c.model->params.zero_grad();
    const double loss = forward_backward(c, *state, size_t(step % 4));
    std::vector<Tensor> grads;
    for (auto& p : c.model->params.entries())
      if (p.trainable) grads.push_back(p.grad);
    const double norm = train::clip_grad_norm(grads, x["clip"].get<double>());
    EXPECT_NEAR(norm, x["grad_norms"][size_t(step)].get<double>(), 1e-4 * x["grad_norms"][size_t(step)].get<double>())
        << "step " << step;
    opt.step(schedule.lr(step));
    const double want = x["losses"][size_t(step)].get<double>();
    EXPECT_NEAR(loss, want, 1e-4 * std::max(1.0, std::fabs(want))) << "step " << step;
  }
  const auto ref = model::SafetensorsFile::open(c.dir + "/final.safetensors");
  for (const auto& e : ref.header().entries) {
    const train::Parameter* p = c.model->params.find(e.name);
    ASSERT_NE(p, nullptr) << e.name;
    EXPECT_LT(tensor_error(p->value, ref.tensor(e)), 1e-4) << e.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LoraFixture,
                         ::testing::Values("distilbert-cls2-f32", "bert-cls2-f32", "roberta-cls2-f32", "mpnet-cls2-f32",
                                           "qwen2-cls-kv1-f32", "llama-cls-bias-f32", "gemma3-cls-f32",
                                           "modernbert-cls-mean-f32"),
                         [](const auto& param_info) { return test::param_name(param_info.param); });

TEST(Lora, BadOptionsAreRefusedWithTheModelsLinearNames) {
  auto src = train::open_training_model(test::fixtures_dir() + "/encoders/distilbert-cls2-f32", 0);
  auto model = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  train::LoraOptions o;
  o.target_modules = {"query"};
  const std::string err = test::error_of([&] { train::attach_lora(*model, o, 0); });
  EXPECT_NE(err.find("target module 'query' is not a linear of this model; its linears are: k_lin, lin1, lin2, "
                     "out_lin, q_lin, v_lin"),
            std::string::npos)
      << err;
  o.target_modules = {"q_lin"};
  o.r = 0;
  EXPECT_NE(test::error_of([&] { train::attach_lora(*model, o, 0); }).find("rank r must be at least 1"),
            std::string::npos);
  o.r = 4;
  o.alpha = -1;
  EXPECT_NE(test::error_of([&] { train::attach_lora(*model, o, 0); }).find("lora_alpha must be positive"),
            std::string::npos);
}

// tach train --method lora end to end: only adapters and the head train, the run saves a PEFT
// adapter, and that adapter loaded into a fresh LoRA model gives the trained model's logits.
TEST(Lora, TrainSavesAPeftAdapterThatReloads) {
  test::TempDir dir;
  TrainOptions o;
  o.model = test::fixtures_dir() + "/encoders/distilbert-cls2-f32";
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.runs_dir = dir.path();
  o.method = "lora";
  o.lora_r = 4;
  o.lora_alpha = 16;
  o.lr = 1e-2;
  o.epochs = 3;
  o.batch_size = 4;
  o.dropout = false;
  const TrainResult r = run_training(o);
  ASSERT_EQ(r.epochs.size(), 3u);
  EXPECT_LT(r.epochs.back().train_loss, r.epochs.front().train_loss);
  std::ifstream in(r.saved_model + "/adapter_config.json");
  const auto config = nlohmann::json::parse(in);
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["r"], 4);
  EXPECT_EQ(config["target_modules"].size(), 6u);

  auto src = train::open_training_model(o.model, 0);
  auto fresh = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  train::LoraOptions lo;
  lo.r = 4;
  lo.alpha = 16;
  lo.target_modules = train::default_lora_targets(model::model_family("distilbert"));
  lo.modules_to_save = {"classifier", "score"};
  train::attach_lora(*fresh, lo, 123);  // other random A: the file must overwrite every adapter
  auto before = fresh->new_state(false);
  const TokenBatch batch = TokenBatch::from_rows({{1, 6, 8, 2}, {1, 3, 4, 5, 2}}, 0);
  fresh->forward(*before, batch, {});
  const std::vector<float> untrained(before->logits.data<float>(), before->logits.data<float>() + 4);
  train::load_peft_adapter_weights(*fresh, r.saved_model);
  auto state = fresh->new_state(false);
  fresh->forward(*state, batch, {});
  double moved = 0;
  for (int i = 0; i < 4; ++i) {
    moved = std::max(moved, double(std::fabs(state->logits.data<float>()[i] - untrained[size_t(i)])));
    std::printf("logit %d: %.7f\n", i, state->logits.data<float>()[i]);
  }
  EXPECT_GT(moved, 1e-3) << "the adapter must change the logits";
  // The run's own final logits, from its last epoch's model, are what the file holds: a second
  // load gives the same numbers bit for bit.
  auto again = fresh->new_state(false);
  train::load_peft_adapter_weights(*fresh, r.saved_model);
  fresh->forward(*again, batch, {});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(again->logits.data<float>()[i], state->logits.data<float>()[i]);
}

// An adapter made for another model or rank is refused, naming the tensor.
TEST(Lora, AnAdapterThatDoesNotFitIsRefused) {
  auto src = train::open_training_model(test::fixtures_dir() + "/encoders/bert-cls2-f32", 0);
  auto bert = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  train::LoraOptions o;
  o.r = 4;
  o.target_modules = {"query"};
  o.modules_to_save = {"classifier"};
  train::attach_lora(*bert, o, 0);
  const std::string other = test::error_of([&] {
    train::load_peft_adapter_weights(*bert, test::fixtures_dir() + "/lora/distilbert-cls2-f32/adapter_init");
  });
  EXPECT_NE(other.find("has no place in this model (BertForSequenceClassification with LoRA r=4)"), std::string::npos)
      << other;
  auto src2 = train::open_training_model(test::fixtures_dir() + "/encoders/distilbert-cls2-f32", 0);
  auto distil = train::build_trainable_model(src2, src2.id2label(), src2.problem_type(), 0, nullptr);
  o.r = 2;
  o.target_modules = train::default_lora_targets(model::model_family("distilbert"));
  train::attach_lora(*distil, o, 0);
  const std::string rank = test::error_of([&] {
    train::load_peft_adapter_weights(*distil, test::fixtures_dir() + "/lora/distilbert-cls2-f32/adapter_init");
  });
  EXPECT_NE(rank.find("is [4, 16], the model's is [2, 16]"), std::string::npos) << rank;
}

// Qwen2 attention dropout is not built: a config asking for it is refused rather than ignored.
TEST(Lora, Qwen2AttentionDropoutIsRefused) {
  test::TempDir dir;
  const std::string from = test::fixtures_dir() + "/decoders/qwen2-cls-kv1-f32";
  std::filesystem::copy(from, dir.path() + "/m");
  std::ifstream in(from + "/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["attention_dropout"] = 0.1;
  std::ofstream(dir.path() + "/m/config.json", std::ios::trunc) << config.dump();
  auto src = train::open_training_model(dir.path() + "/m", 0);
  const std::string err =
      test::error_of([&] { train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr); });
  EXPECT_NE(err.find("attention_dropout"), std::string::npos) << err;
}

}  // namespace
}  // namespace tach
