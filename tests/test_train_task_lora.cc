// LoRA on the per-token heads (tach train --task mlm|token-classification|question-answering
// --method lora) against peft + transformers + torch (scripts/golden/make_task_lora_golden.py):
// tach train's default targets and modules to save are peft's for the task, and with the same
// adapter weights every trainable gradient on one padded batch and 20 AdamW steps equal peft's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/family.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "task_fixtures.h"
#include "test_util.h"
#include "train/grad_norm.h"
#include "train/lora.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/training_method.h"

namespace tach {
namespace {

std::string golden_dir(const std::string& name) { return test::fixtures_dir() + "/train_tasks_lora/" + name; }

// The case's task model with adapters set up as tach train sets them (--method lora, r and alpha
// of the golden, the default targets and modules to save), then peft's initial adapter loaded.
test::TaskCase load_lora_case(const std::string& name) {
  test::TaskCase c = test::load_task_case(name, golden_dir(name));
  train::MethodOptions m;
  m.method = "lora";
  m.lora.r = c.expected["r"].get<int64_t>();
  m.lora.alpha = c.expected["lora_alpha"].get<float>();
  train::apply_training_method(*c.model, model::model_family(c.source.model_type), m, 0);
  train::load_peft_adapter_weights(*c.model, c.dir + "/adapter_init");
  return c;
}

class TaskLora : public ::testing::TestWithParam<std::string> {};

// tach train's defaults for the task are what peft saved in adapter_config.json (its task
// type's modules_to_save), and the trainable set is peft's: the adapters and the head to save.
TEST_P(TaskLora, DefaultsAndTrainableSetArePefts) {
  test::TaskCase c = load_lora_case(GetParam());
  const auto peft = model::PeftAdapter::open(c.dir + "/adapter_init");
  const train::LoraOptions from_peft = train::lora_options_of(*peft);
  const train::LoraOptions& tach = c.model->lora->options;
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(tach.target_modules), sorted(from_peft.target_modules));
  EXPECT_EQ(sorted(tach.modules_to_save), sorted(from_peft.modules_to_save));
  std::vector<std::string> trainable;
  for (const auto& p : c.model->params.entries()) {
    if (p.trainable) trainable.push_back(p.name);
    else EXPECT_FALSE(p.grad.defined()) << p.name << " is frozen but keeps a gradient";
  }
  EXPECT_EQ(sorted(trainable), sorted(c.expected["trainable"].get<std::vector<std::string>>()));
}

TEST_P(TaskLora, GradientsMatchPeft) {
  test::TaskCase c = load_lora_case(GetParam());
  for (const bool fused : {false, true}) {
    const auto state = c.model->new_state(fused);
    c.model->params.zero_grad();
    const double loss = test::task_forward_backward(c, *state, 0);
    EXPECT_NEAR(loss, c.expected["loss0"].get<double>(), 1e-5 * std::max(1.0, std::fabs(loss)));
    const auto ref = model::SafetensorsFile::open(c.dir + "/grads.safetensors");
    for (const auto& e : ref.header().entries) {
      const train::Parameter* p = c.model->params.find(e.name);
      ASSERT_NE(p, nullptr) << "tach has no parameter " << e.name;
      ASSERT_TRUE(p->grad.defined()) << e.name << " trains in peft";
      if (test::zero_in_exact_arithmetic(e.name, c.model->head())) {
        for (int64_t i = 0; i < p->grad.numel(); ++i)
          EXPECT_LT(std::fabs(p->grad.data<float>()[i]), 1e-6) << e.name << " should be rounding noise";
        continue;
      }
      EXPECT_LT(test::tensor_error(p->grad, ref.tensor(e)), 1e-4) << e.name << (fused ? " (fused)" : "");
    }
  }
}

TEST_P(TaskLora, TwentyAdamWStepsMatchPeft) {
  test::TaskCase c = load_lora_case(GetParam());
  const nlohmann::json& x = c.expected;
  train::AdamWConfig config;
  config.weight_decay = x["weight_decay"].get<float>();
  train::AdamWOptimizer opt(c.model->params, config, train::DecayScope::trainer);
  train::LinearSchedule schedule{x["lr"].get<double>(), x["warmup"].get<int64_t>(), x["steps"].get<int64_t>(), true};
  const auto state = c.model->new_state(false);
  for (int64_t step = 0; step < x["steps"].get<int64_t>(); ++step) {
    c.model->params.zero_grad();
    const double loss = test::task_forward_backward(c, *state, size_t(step % 4));
    std::vector<Tensor> grads;
    for (auto& p : c.model->params.entries())
      if (p.trainable) grads.push_back(p.grad);
    const double norm = train::clip_grad_norm(grads, x["clip"].get<double>());
    const double want_norm = x["grad_norms"][size_t(step)].get<double>();
    EXPECT_NEAR(norm, want_norm, 1e-4 * want_norm) << "step " << step;
    opt.step(schedule.lr(step));
    const double want = x["losses"][size_t(step)].get<double>();
    EXPECT_NEAR(loss, want, 1e-4 * std::max(1.0, std::fabs(want))) << "step " << step;
  }
  const auto ref = model::SafetensorsFile::open(c.dir + "/final.safetensors");
  for (const auto& e : ref.header().entries) {
    const train::Parameter* p = c.model->params.find(e.name);
    ASSERT_NE(p, nullptr) << e.name;
    if (!test::zero_in_exact_arithmetic(e.name, c.model->head())) {
      EXPECT_LT(test::tensor_error(p->value, ref.tensor(e)), 1e-4) << e.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TaskLora,
                         ::testing::Values("bert-mlm-f32", "distilbert-mlm-f32", "roberta-mlm-f32", "mpnet-mlm-f32",
                                           "xlm-roberta-mlm-f32", "bert-token-cls5-f32", "distilbert-token-cls5-f32",
                                           "xlm-roberta-token-cls5-f32", "bert-qa-f32", "distilbert-qa-f32",
                                           "roberta-qa-f32", "mpnet-qa-f32", "modernbert-mlm-f32",
                                           "modernbert-token-cls5-f32", "modernbert-qa-f32", "llama-token-cls5-f32",
                                           "llama-qa-f32", "mistral-token-cls5-f32", "mistral-qa-f32", "qwen2-qa-f32",
                                           "qwen3-token-cls5-f32", "roberta-token-cls5-f32", "mpnet-token-cls5-f32",
                                           "xlm-roberta-qa-f32", "qwen2-token-cls5-f32", "qwen3-qa-f32"),
                         [](const auto& param_info) { return test::param_name(param_info.param); });

}  // namespace
}  // namespace tach
