// QLoRA on the training engine: the frozen base's linear weights in NF4 (as bitsandbytes
// quantizes them), LoRA adapters in f32 on top. The forward of the sequence classifiers and of
// the per-token heads (masked LM, token classifier, question answering) matches transformers +
// bitsandbytes (4-bit NF4, double quantization, f32 compute) + peft with the same adapter
// (scripts/golden/make_qlora_logits.py); training steps run on the NF4 base and learn; the base
// weights take about a seventh of their f32 bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "model/family.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "tach/memory.h"
#include "tach/train.h"
#include "task_fixtures.h"
#include "test_util.h"
#include "train/lora.h"
#include "train/training_method.h"
#include "train/training_model.h"
#include "train_fixtures.h"

namespace tach {
namespace {

const std::map<std::string, std::string> kModels = {{"distilbert-cls2-f32", "encoders/distilbert-cls2-f32"},
                                                    {"bert-cls2-f32", "encoders/bert-cls2-f32"},
                                                    {"qwen2-cls-kv1-f32", "decoders/qwen2-cls-kv1-f32"}};

class QloraFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(QloraFixture, ForwardMatchesBitsandbytesAndPeft) {
  const std::string c = GetParam();
  const std::string dir = test::fixtures_dir() + "/lora/" + c;
  std::ifstream in(dir + "/qlora_logits.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  auto src = train::open_training_model(test::fixtures_dir() + "/" + kModels.at(c), 0);
  auto model = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  train::attach_lora(*model, train::lora_options_of(*model::PeftAdapter::open(dir + "/adapter_init")), 0);
  train::load_peft_adapter_weights(*model, dir + "/adapter_init");
  const int64_t quantized = model->quantize_base_nf4();
  EXPECT_EQ(quantized, expected["linear4bit_modules"].get<int64_t>()) << "the same nn.Linear weights in NF4";
  std::vector<TokenBatch> batches;
  std::vector<train::Targets> targets;
  test::load_batches(test::fixtures_dir() + "/train/" + c + "/batches.json", false, &batches, &targets);
  double err = 0, scale = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    auto state = model->new_state(false);
    model->forward(*state, batches[b], train::DropoutRates{});
    const auto& ref = expected["logits"][b];
    for (int64_t i = 0; i < state->logits.size(0); ++i)
      for (int64_t j = 0; j < state->logits.size(1); ++j) {
        const double r = ref[i][j].get<double>();
        err = std::max(err, std::fabs(double(state->logits.data<float>()[i * state->logits.size(1) + j]) - r));
        scale = std::max(scale, std::fabs(r));
      }
  }
  // The NF4 codes are bitsandbytes' bit for bit; what is left is the double-quantized absmax
  // (an ulp of offset, test_nf4) and summation order: far inside bf16's 2^-8.
  EXPECT_LT(err, 1e-3 * std::max(1.0, scale)) << c;
}

INSTANTIATE_TEST_SUITE_P(Bitsandbytes, QloraFixture,
                         ::testing::Values("distilbert-cls2-f32", "bert-cls2-f32", "qwen2-cls-kv1-f32"));

// The per-token heads: the task model of tests/fixtures/train_tasks/<case> with peft's adapter
// (train_tasks_lora/<case>/adapter_init), a row of logits per token of every batch (the masked
// LM's over the vocabulary) against peft + bitsandbytes, every family that trains the head.
// Rows compared: every token a loss reads. Question answering's start/end softmax runs over every
// position, padding too, so all of its rows; the masked LM and the token classifier read real
// tokens only. A padded token's row is otherwise undefined where a sliding window leaves it only
// padding to see (Mistral's 4-key window): transformers' eager softmax over scores that all round
// to finfo.min is uniform over every key, sdpa's is another, tach's causal attention gives zeros.
// Where bitsandbytes' approximate search picked an absmax code one step past the nearest
// (test_nf4; one code of Mistral's), tach's exact search is compared with the same forward on the
// nearest codes, the rest of the quantization bitsandbytes' own.
class QloraTaskFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(QloraTaskFixture, ForwardMatchesBitsandbytesAndPeft) {
  const std::string c = GetParam();
  const std::string dir = test::fixtures_dir() + "/train_tasks_lora/" + c;
  std::ifstream in(dir + "/qlora_logits.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  test::TaskCase task = test::load_task_case(c, dir);
  train::TrainableModel& model = *task.model;
  train::attach_lora(model, train::lora_options_of(*model::PeftAdapter::open(dir + "/adapter_init")), 0);
  train::load_peft_adapter_weights(model, dir + "/adapter_init");
  EXPECT_EQ(model.quantize_base_nf4(), expected["linear4bit_modules"].get<int64_t>())
      << "the same nn.Linear weights in NF4";
  const bool nearest = expected.contains("logits_nearest_absmax");
  if (nearest) EXPECT_LE(expected["absmax_codes_not_nearest"].get<int64_t>(), 2) << "bitsandbytes' search, rarely off";
  const nlohmann::json& want = expected[nearest ? "logits_nearest_absmax" : "logits"];
  ASSERT_EQ(want.size(), task.batches.size());
  const bool every_row = model.head() == Head::question_answering;
  double err = 0, scale = 0;
  std::string worst;  // where err is: batch, token row, column
  for (size_t b = 0; b < task.batches.size(); ++b) {
    auto state = model.new_state(false);
    model.forward(*state, task.batches[b], train::DropoutRates{});  // no predicted rows: every token's
    const auto& ref = want[b];
    const Tensor& logits = state->logits;  // [B * T, labels]
    ASSERT_EQ(int64_t(ref.size()), logits.size(0)) << c << " batch " << b;
    ASSERT_EQ(int64_t(ref[0].size()), logits.size(1)) << c << " batch " << b;
    const int64_t T = task.batches[b].seq_len();
    const Tensor& mask = task.batches[b].attention_mask;  // [B, T]
    for (int64_t i = 0; i < logits.size(0); ++i)
      for (int64_t j = 0; j < logits.size(1) && (every_row || mask.data<int32_t>()[i] != 0); ++j) {
        const double r = ref[i][j].get<double>();
        const double e = std::fabs(double(logits.data<float>()[i * logits.size(1) + j]) - r);
        if (e > err)
          worst = "batch " + std::to_string(b) + " row " + std::to_string(i / T) + " token " + std::to_string(i % T) +
                  " column " + std::to_string(j);
        err = std::max(err, e);
        scale = std::max(scale, std::fabs(r));
      }
  }
  EXPECT_LT(err, 1e-3 * std::max(1.0, scale)) << c << ", worst at " << worst;  // as the sequence classifiers
}

// One backward as tach train --method qlora sets it up (its NF4 base, peft's task defaults, r and
// alpha of the LoRA golden) from peft's adapter: the loss of batch 0 and every trainable
// parameter's gradient (adapters, heads saved whole) against bitsandbytes' MatMul4Bit backward
// under peft, on the nearest absmax codes (qlora_grads.safetensors).
TEST_P(QloraTaskFixture, GradientsMatchBitsandbytesAndPeft) {
  const std::string c = GetParam();
  const std::string dir = test::fixtures_dir() + "/train_tasks_lora/" + c;
  std::ifstream in(dir + "/qlora_logits.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  test::TaskCase task = test::load_task_case(c, dir);
  train::MethodOptions m;
  m.method = "qlora";
  m.lora.r = task.expected["r"].get<int64_t>();
  m.lora.alpha = task.expected["lora_alpha"].get<float>();
  train::apply_training_method(*task.model, model::model_family(task.source.model_type), m, 0);
  train::load_peft_adapter_weights(*task.model, dir + "/adapter_init");
  EXPECT_GT(task.model->params.nf4_bytes(), 0);
  const auto state = task.model->new_state(false);
  task.model->params.zero_grad();
  const double loss = test::task_forward_backward(task, *state, 0);
  EXPECT_NEAR(loss, expected["loss0"].get<double>(), 1e-4 * std::max(1.0, std::fabs(loss))) << c;
  const auto ref = model::SafetensorsFile::open(dir + "/qlora_grads.safetensors");
  ASSERT_FALSE(ref.header().entries.empty());
  for (const auto& e : ref.header().entries) {
    const train::Parameter* p = task.model->params.find(e.name);
    ASSERT_NE(p, nullptr) << "tach has no parameter " << e.name;
    ASSERT_TRUE(p->grad.defined()) << e.name << " trains in peft";
    if (test::zero_in_exact_arithmetic(e.name, task.model->head())) continue;  // rounding noise
    // The NF4 weights are bitsandbytes' to an ulp of the absmax offset: the f32 LoRA tests' 1e-4.
    EXPECT_LT(test::tensor_error(p->grad, ref.tensor(e)), 1e-4) << c << ": " << e.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Bitsandbytes, QloraTaskFixture,
                         ::testing::Values("bert-mlm-f32", "distilbert-mlm-f32", "roberta-mlm-f32",
                                           "xlm-roberta-mlm-f32", "mpnet-mlm-f32", "modernbert-mlm-f32",
                                           "bert-token-cls5-f32", "distilbert-token-cls5-f32",
                                           "xlm-roberta-token-cls5-f32", "modernbert-token-cls5-f32",
                                           "llama-token-cls5-f32", "mistral-token-cls5-f32", "qwen3-token-cls5-f32",
                                           "bert-qa-f32", "distilbert-qa-f32", "roberta-qa-f32", "mpnet-qa-f32",
                                           "modernbert-qa-f32", "llama-qa-f32", "mistral-qa-f32", "qwen2-qa-f32",
                                           "roberta-token-cls5-f32", "mpnet-token-cls5-f32", "qwen2-token-cls5-f32",
                                           "xlm-roberta-qa-f32", "qwen3-qa-f32"),
                         [](const auto& param_info) { return test::param_name(param_info.param); });

// tach train --method qlora end to end: it learns, saves a PEFT adapter, and the base's NF4
// weights take at most 0.3x (here about 0.14x) of their f32 bytes.
TEST(Qlora, TrainsOnAnNf4Base) {
  test::TempDir dir;
  TrainOptions o;
  o.model = test::fixtures_dir() + "/encoders/distilbert-cls2-f32";
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.runs_dir = dir.path();
  o.method = "qlora";
  o.lora_r = 4;
  o.lora_alpha = 16;
  o.lr = 1e-2;
  o.epochs = 3;
  o.batch_size = 4;
  o.dropout = false;
  const TrainResult r = run_training(o);
  ASSERT_EQ(r.epochs.size(), 3u);
  EXPECT_LT(r.epochs.back().train_loss, r.epochs.front().train_loss);
  EXPECT_TRUE(std::filesystem::exists(r.saved_model + "/adapter_model.safetensors"));

  auto src = train::open_training_model(o.model, 0);
  auto model = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr);
  train::LoraOptions lo;
  lo.target_modules = train::default_lora_targets(model::model_family("distilbert"));
  lo.modules_to_save = {"classifier"};
  train::attach_lora(*model, lo, 0);
  int64_t f32_bytes = 0;
  for (const auto& p : model->params.entries())
    if (!p.trainable && p.value.dim() == 2 && p.name.find("layer.") != std::string::npos) f32_bytes += p.value.nbytes();
  model->quantize_base_nf4();
  const double ratio = double(model->params.nf4_bytes()) / double(f32_bytes);
  EXPECT_LT(ratio, 0.3);
  EXPECT_GT(ratio, 0.125);  // 4 bits of 32, plus the block overhead
  for (const auto& p : model->params.entries())
    if (p.nf4) { EXPECT_FALSE(p.value.defined()) << p.name << ": no f32 copy is kept"; }
}

// tach train --method full,lora,qlora --exec eager,fused: a run per combination and the table.
TEST(Comparison, WritesOneRowPerMethodAndExec) {
  test::TempDir dir;
  TrainOptions o;
  o.model = test::fixtures_dir() + "/encoders/distilbert-cls2-f32";
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.eval_data.path = o.data.path;
  o.runs_dir = dir.path();
  o.run_id = "cmp";
  o.epochs = 1;
  o.batch_size = 4;
  const TrainComparison c = run_training_comparison(o, {"full", "lora", "qlora"}, {"eager", "fused"});
  ASSERT_EQ(c.rows.size(), 6u);
  EXPECT_EQ(c.rows[0].method, "full");
  EXPECT_EQ(c.rows[5].exec, "fused");
  std::ifstream in(c.dir + "/summary.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "tach.train_comparison/1");
  ASSERT_EQ(j["rows"].size(), 6u);
  for (const auto& r : j["rows"]) {
    EXPECT_GT(r["step_ms_median"].get<double>(), 0);
    EXPECT_GE(r["step_ms_p90"].get<double>(), r["step_ms_median"].get<double>());
    EXPECT_FALSE(r["dev_accuracy"].is_null());
    EXPECT_GT(r["peak_bytes_by_category"]["weights"].get<int64_t>(), 0);
  }
  // full trains everything; LoRA and QLoRA the adapters and the head only, out of more in all.
  EXPECT_EQ(j["rows"][0]["trainable_parameters"], j["rows"][0]["total_parameters"]);
  EXPECT_LT(j["rows"][2]["trainable_parameters"].get<int64_t>(), j["rows"][0]["trainable_parameters"].get<int64_t>());
  EXPECT_EQ(j["rows"][4]["total_parameters"], j["rows"][2]["total_parameters"]);
  // NF4 base weights: QLoRA's weights peak below LoRA's.
  EXPECT_LT(j["rows"][4]["peak_bytes_by_category"]["weights"].get<int64_t>(),
            j["rows"][2]["peak_bytes_by_category"]["weights"].get<int64_t>());
  std::ifstream csv(c.dir + "/comparison.csv");
  int lines = 0;
  for (std::string l; std::getline(csv, l);) ++lines;
  EXPECT_EQ(lines, 7);
  EXPECT_TRUE(std::filesystem::exists(c.dir + "/qlora-fused/summary.json"));
  EXPECT_NE(test::error_of([&] { run_training_comparison(o, {"full"}, {"eager"}); }).find("exists already"),
            std::string::npos);
}

}  // namespace
}  // namespace tach
