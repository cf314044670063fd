// Gradient checkpointing: the backward recomputes each layer from its saved input, with the same
// dropout masks, so every gradient equals the one without checkpointing bit for bit (eager and
// fused, with dropout on), while the activations kept shrink to the layer inputs plus one layer.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "tach/memory.h"
#include "test_util.h"
#include "train/classifier_loss.h"
#include "train/lora.h"
#include "train/training_model.h"
#include "train_fixtures.h"

namespace tach {
namespace {

const std::map<std::string, std::string> kModels = {{"distilbert-cls2-f32", "encoders/distilbert-cls2-f32"},
                                                    {"bert-cls2-f32", "encoders/bert-cls2-f32"},
                                                    {"qwen2-cls-kv1-f32", "decoders/qwen2-cls-kv1-f32"},
                                                    // Head-pruned: layer 0 keeps 2 heads of 4, layer 1 3, so the
                                                    // buffers the layers share are sized for layer 1.
                                                    {"bert-pruned-cls2", "prune/bert-pruned"},
                                                    {"distilbert-pruned-cls2", "prune/distilbert-pruned"}};

struct StepResult {
  std::map<std::string, std::vector<float>> grads;
  std::vector<float> logits;
  int64_t activation_bytes = 0;
};

StepResult run(const std::string& c, bool fused, bool checkpoint, bool lora) {
  auto src = train::open_training_model(test::fixtures_dir() + "/" + kModels.at(c), 0);
  auto model = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  if (lora) {
    train::LoraOptions o;
    o.r = 4;
    o.dropout = 0.1f;
    o.target_modules = train::default_lora_targets(*src.family);
    o.modules_to_save = {"classifier", "score"};
    train::attach_lora(*model, o, 3);
  }
  std::vector<TokenBatch> batches;
  std::vector<train::Targets> targets;
  test::load_batches(test::fixtures_dir() + "/train/" + c + "/batches.json", false, &batches, &targets);
  const int64_t before = memory_stats(Device::cpu())[MemoryCategory::activations].current;
  auto state = model->new_state(fused);
  state->checkpoint = checkpoint;
  train::DropoutRates dr;
  dr.hidden = 0.1f, dr.classifier = 0.1f, dr.lora = lora ? 0.1f : 0.f, dr.seed = 11;
  if (src.model_type != "qwen2") dr.attention = 0.1f;  // Qwen2 has no attention dropout
  model->params.zero_grad();
  model->forward(*state, batches[1], dr);
  StepResult r;
  r.activation_bytes = memory_stats(Device::cpu())[MemoryCategory::activations].current - before;
  const int64_t B = batches[1].batch(), L = model->num_labels();
  r.logits.assign(state->logits.data<float>(), state->logits.data<float>() + B * L);
  const Tensor d = Tensor::zeros(state->logits.shape(), DType::f32, model->device);
  train::classifier_loss("single_label_classification", state->logits,
                         train::loss_targets(targets[1], model->head(), batches[1].seq_len(), model->device), d, 1.f);
  model->backward(*state, batches[1], d.data<float>(), dr);
  for (const auto& p : model->params.entries())
    if (p.trainable && p.grad.defined())
      r.grads[p.name].assign(p.grad.data<float>(), p.grad.data<float>() + p.grad.numel());
  return r;
}

class Checkpointing : public ::testing::TestWithParam<std::tuple<std::string, bool, bool>> {};

TEST_P(Checkpointing, GradientsAreBitIdentical) {
  const auto [c, fused, lora] = GetParam();
  const StepResult plain = run(c, fused, false, lora), ckpt = run(c, fused, true, lora);
  EXPECT_EQ(plain.logits, ckpt.logits);
  ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
  for (const auto& [name, g] : plain.grads) {
    const auto& h = ckpt.grads.at(name);
    ASSERT_EQ(g.size(), h.size());
    EXPECT_EQ(0, std::memcmp(g.data(), h.data(), g.size() * 4)) << name;
  }
  EXPECT_LT(ckpt.activation_bytes, plain.activation_bytes) << "checkpointing keeps less";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Checkpointing,
                         ::testing::Combine(::testing::Values("distilbert-cls2-f32", "bert-cls2-f32",
                                                              "qwen2-cls-kv1-f32", "bert-pruned-cls2",
                                                              "distilbert-pruned-cls2"),
                                            ::testing::Bool(), ::testing::Bool()));

}  // namespace
}  // namespace tach
