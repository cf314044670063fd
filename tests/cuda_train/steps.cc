// Whole training steps on CUDA against the same steps on the CPU: the model built on each device
// from one fixture (tests/fixtures/train/: encoders and decoders with padded batches), then the
// step tach train, tach bench --train and tach profile --train run (train/train_step.h): the loss,
// the gradient norm, every gradient and every weight after the update, one step and 20 AdamW steps,
// in full fine-tuning, LoRA and QLoRA; the per-token heads; dropout on (the same masks on both
// sides). Without a GPU these skip; the errors that say why a GPU step cannot run are checked here
// on any machine (CudaTrainStepsWithoutGpu; the model's build: test_train_run's TrainRunDevice).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "../cuda_compare.h"
#include "../train_fixtures.h"
#include "model/safetensors.h"
#include "tach/error.h"
#include "tach/train.h"
#include "train/save_model.h"
#include "train/train_step.h"
#include "train/training_method.h"
#include "train/training_model.h"

namespace tach::test {
namespace {

// A fixture's model on one device, with its method applied, and its padded batches (host memory:
// the step moves each to the model's device, as tach train's collator batches are).
struct StepCase {
  train::TrainingModelSource source;
  std::unique_ptr<train::TrainableModel> model;
  std::vector<TokenBatch> batches;
  std::vector<train::Targets> targets;
  std::vector<std::string> rounding_walkers;  // this case's parameters beyond rounding_walks' (see there)
};

std::string model_of(const std::string& fixture) {
  std::ifstream e(fixtures_dir() + "/train/" + fixture + "/expected.json");
  return fixtures_dir() + "/" + nlohmann::json::parse(e)["model"].get<std::string>();
}

// LoRA's B starts at zero, so that its A would get no gradient in the first step: both sides'
// B are set to the same small random values, so that every adapter gradient is exercised.
void randomize_lora_b(train::TrainableModel& m) {
  unsigned seed = 11;
  for (auto& p : m.params.entries())
    if (p.name.find("lora_B") != std::string::npos) {
      const Tensor host = random_tensor(p.value.shape(), seed++, 0.05f);
      p.value = host.to_device(m.device, MemoryCategory::weights);
    }
}

StepCase open_case(const std::string& fixture, Device device, const std::string& method,
                   Head head = Head::sequence_classification) {
  StepCase c;
  c.source = train::open_training_model(model_of(fixture), 0);
  std::vector<std::string> labels = c.source.id2label();
  if (head != Head::sequence_classification) labels = {"LABEL_0", "LABEL_1"};
  c.model = train::build_trainable_model(
      c.source, labels, head == Head::sequence_classification ? c.source.problem_type() : "", 0, nullptr, head, device);
  train::MethodOptions mo;
  mo.method = method;
  mo.lora.r = 4;
  mo.lora.alpha = 8;
  (void)train::apply_training_method(*c.model, *c.source.family, mo, 0);
  if (method != "full") randomize_lora_b(*c.model);
  load_batches(fixtures_dir() + "/train/" + fixture + "/batches.json", c.model->num_labels() == 1, &c.batches,
               &c.targets);
  return c;
}

train::StepSettings settings_of(const StepCase& c, bool dropout) {
  train::StepSettings s;
  s.problem_type = c.model->num_labels() == 1 ? "regression" : "single_label_classification";
  s.adam.weight_decay = 0.01f;  // the decay's order in the update is part of what must match
  s.max_grad_norm = 1.0;
  if (dropout) s.dropout = c.source.dropout(c.model->head());
  s.dropout.seed = 5;
  return s;
}

// The key projection's bias adds the same q·b to every score of a row, which softmax ignores:
// its gradient is zero in exact arithmetic and rounding noise (~1e-9) on both devices, different
// noise from different summation orders; AdamW divides that noise by its own RMS, so the bias
// walks by about lr a step in a direction rounding picks (test_train_golden says the same against
// torch). Qwen's key bias is nearly so (RoPE's lowest frequencies barely rotate it). Their
// gradients are checked in absolute terms, their weights not at all.
bool rounding_walks(const StepCase& c, const std::string& name) {
  for (const std::string& walker : c.rounding_walkers)
    if (name.find(walker) != std::string::npos) return true;
  for (const char* key_bias : {"attention.self.key.bias", "attention.k_lin.bias", "attention.attn.k.bias",
                               "self_attn.k_proj.bias", "attn.Wqkv.bias"})
    if (name.find(key_bias) != std::string::npos) return true;
  return false;
}

// f32 on both devices: the GEMMs block their sums differently (cuBLASLt against oneDNN, TF32 off)
// and the reductions run in other orders; 1e-5 of each tensor's largest value is a few ulps of
// accumulated rounding at these sizes, far below what any indexing or formula error gives.
constexpr double kStepTol = 1e-5;

void expect_same_gradients(const StepCase& cpu, const StepCase& gpu) {
  const auto& want = cpu.model->params.entries();
  const auto& got = gpu.model->params.entries();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].name, got[i].name);
    if (!want[i].trainable || !want[i].grad.defined()) continue;
    const Tensor g = on_cpu(got[i].grad);
    if (rounding_walks(cpu, want[i].name)) {
      double worst = 0;
      for (int64_t k = 0; k < g.numel(); ++k)
        worst = std::max(worst, double(std::fabs(g.data<float>()[k] - want[i].grad.data<float>()[k])));
      EXPECT_LT(worst, 1e-6) << want[i].name << ": its gradient is zero up to rounding";
      continue;
    }
    EXPECT_LE(scaled_error(g, want[i].grad), kStepTol) << "gradient of " << want[i].name;
  }
}

void expect_same_weights(const StepCase& cpu, const StepCase& gpu, double tolerance) {
  const auto& want = cpu.model->params.entries();
  const auto& got = gpu.model->params.entries();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i].value.defined() || rounding_walks(cpu, want[i].name)) continue;  // NF4: the codes do not change
    EXPECT_LE(scaled_error(on_cpu(got[i].value), want[i].value), tolerance) << "weight " << want[i].name;
  }
}

double relative(double got, double want) { return std::fabs(got - want) / std::max(1e-12, std::fabs(want)); }

// The same micro-batches on both sides: batch `step` of the fixture's, in turn.
train::MicroBatchSource source_of(const StepCase& c, int64_t step) {
  return [&c, step](int64_t, TokenBatch* b, train::Targets* t) {
    const size_t i = size_t(step) % c.batches.size();
    *b = c.batches[i];
    *t = c.targets[i];
  };
}

// Runs `steps` optimizer steps on both devices, comparing each step's loss and gradient norm, then
// (one step) the gradients the update used and (always) the weights after the last update.
void expect_same_steps(StepCase& cpu, StepCase& gpu, int64_t steps, bool dropout, double lr,
                       double weight_tolerance = kStepTol) {
  train::TrainingStep on_host(*cpu.model, settings_of(cpu, dropout));
  train::TrainingStep on_device(*gpu.model, settings_of(gpu, dropout));
  for (int64_t s = 0; s < steps; ++s) {
    const train::StepOutcome want = on_host.run(s, 1, source_of(cpu, s), lr);
    const train::StepOutcome got = on_device.run(s, 1, source_of(gpu, s), lr);
    ASSERT_TRUE(want.updated) << "step " << s << ": the CPU's loss " << want.loss;
    EXPECT_LE(relative(got.loss, want.loss), kStepTol)
        << "loss of step " << s << ": " << got.loss << " vs " << want.loss;
    EXPECT_LE(relative(got.grad_norm, want.grad_norm), kStepTol) << "gradient norm of step " << s;
    EXPECT_EQ(got.tokens, want.tokens);
    if (steps == 1) expect_same_gradients(cpu, gpu);
  }
  expect_same_weights(cpu, gpu, weight_tolerance);
}

struct StepParam {
  std::string fixture, method;
};

std::string step_param_name(const ::testing::TestParamInfo<StepParam>& info) {
  return param_name(info.param.fixture + "_" + info.param.method);
}

class CudaTrainSteps : public CudaTest, public ::testing::WithParamInterface<StepParam> {};

// One step: the loss, the norm, every gradient (as the backward left it: the update reads it clipped) and every weight
// after AdamW.
TEST_P(CudaTrainSteps, OneStepGivesTheCpuLossGradientsAndWeights) {
  StepCase cpu = open_case(GetParam().fixture, Device::cpu(), GetParam().method);
  StepCase gpu = open_case(GetParam().fixture, kGpu, GetParam().method);
  expect_same_steps(cpu, gpu, 1, false, 5e-5);
}

// 20 AdamW steps over the fixture's batches (several lengths: the activations are sized again),
// at a rate that moves the weights well past rounding.
// Each step's loss, norm and gradients agree within kStepTol (the one-step test), but AdamW divides
// every gradient by its own running RMS, so a component whose gradient is mostly rounding noise moves
// by up to lr a step in a direction the noise picks, and 20 steps at 1e-3 carry the devices' different
// summation orders into the weights: on an H200 the worst were 4.7e-5 (Mistral's up_proj) and 1.1e-5
// (ModernBERT's Wi), against O(1) for an indexing or formula error.
constexpr double kTwentyStepsTol = 1e-4;

TEST_P(CudaTrainSteps, TwentyAdamWStepsGiveTheCpuWeights) {
  StepCase cpu = open_case(GetParam().fixture, Device::cpu(), GetParam().method);
  StepCase gpu = open_case(GetParam().fixture, kGpu, GetParam().method);
  expect_same_steps(cpu, gpu, 20, false, 1e-3, kTwentyStepsTol);
}

// Encoders (DistilBERT, BERT, RoBERTa, MPNet's relative position bias) and decoders (Qwen2's
// grouped-query attention with one key/value head, Llama with biases, Mistral's sliding window,
// Qwen3's q/k norms, Gemma 3's 1 + w norms and softcap, ModernBERT's mean pooling).
INSTANTIATE_TEST_SUITE_P(
    Full, CudaTrainSteps,
    ::testing::Values(StepParam{"distilbert-cls2-f32", "full"}, StepParam{"bert-cls2-f32", "full"},
                      StepParam{"roberta-cls2-f32", "full"}, StepParam{"mpnet-cls2-f32", "full"},
                      StepParam{"qwen2-cls-kv1-f32", "full"}, StepParam{"llama-cls-bias-f32", "full"},
                      StepParam{"mistral-cls-window4-f32", "full"}, StepParam{"qwen3-cls-headdim16-f32", "full"},
                      StepParam{"gemma3-cls-f32", "full"}, StepParam{"modernbert-cls-mean-f32", "full"}),
    step_param_name);
// LoRA on every linear (the base frozen, the head trained whole), and QLoRA's NF4 base.
INSTANTIATE_TEST_SUITE_P(Adapters, CudaTrainSteps,
                         ::testing::Values(StepParam{"distilbert-cls2-f32", "lora"}, StepParam{"bert-cls2-f32", "lora"},
                                           StepParam{"qwen2-cls-kv1-f32", "lora"},
                                           StepParam{"modernbert-cls-mean-f32", "lora"},
                                           StepParam{"distilbert-cls2-f32", "qlora"},
                                           StepParam{"qwen2-cls-kv1-f32", "qlora"}),
                         step_param_name);

class CudaTrainStepHeads : public CudaTest {};

// Targets of each per-token head for the fixture's first batch: a label per token (-100 at
// padding), the masked LM's every third real token predicted (its own id), a start and an end per row.
train::Targets per_token_targets(Head head, const TokenBatch& b) {
  train::Targets t;
  const int64_t B = b.batch(), T = b.seq_len();
  const int32_t* ids = b.input_ids.data<int32_t>();
  const int32_t* mask = b.attention_mask.data<int32_t>();
  for (int64_t i = 0; i < B * T; ++i) {
    if (head == Head::token_classification) t.token_labels.push_back(mask[i] ? int32_t(i % 2) : -100);
    if (head == Head::masked_lm) t.token_labels.push_back(mask[i] && i % 3 == 0 ? ids[i] : -100);
  }
  if (head == Head::question_answering)
    for (int64_t r = 0; r < B; ++r) {
      t.start_positions.push_back(int32_t(r % T));
      t.end_positions.push_back(int32_t(std::min<int64_t>(T - 1, r % T + 2)));
    }
  return t;
}

// The per-token heads of an encoder: token classification, question answering, and the masked
// LM on its predicted rows only (gathered and scattered on the device).
TEST_F(CudaTrainStepHeads, PerTokenHeadsGiveTheCpuStep) {
  for (Head head : {Head::token_classification, Head::question_answering, Head::masked_lm}) {
    SCOPED_TRACE(head_name(head));
    StepCase cpu = open_case("distilbert-cls2-f32", Device::cpu(), "full", head);
    StepCase gpu = open_case("distilbert-cls2-f32", kGpu, "full", head);
    for (StepCase* c : {&cpu, &gpu}) {
      c->batches.resize(1);
      c->targets = {per_token_targets(head, c->batches[0])};
    }
    // The span head's bias adds one value to every position's start (or end) score, which the
    // softmax over positions ignores: its gradient is zero in exact arithmetic, and so is that of
    // the last layer's output norm bias under it (without dropout, the rows of dlogits sum to zero
    // per sequence, so the norm's output gradients sum to zero over the rows).
    if (head == Head::question_answering)
      cpu.rounding_walkers = {"qa_outputs.bias", "transformer.layer.1.output_layer_norm.bias"};
    expect_same_steps(cpu, gpu, 1, false, 5e-5);
  }
}

// Dropout on (the config's rates): the GPU draws the CPU's masks, so the steps still agree.
TEST_F(CudaTrainStepHeads, DropoutDrawsTheCpuMasksInAStep) {
  StepCase cpu = open_case("bert-cls2-f32", Device::cpu(), "full");
  StepCase gpu = open_case("bert-cls2-f32", kGpu, "full");
  ASSERT_GT(cpu.source.dropout().hidden, 0.f) << "the fixture must have dropout for this test to mean anything";
  expect_same_steps(cpu, gpu, 3, true, 5e-5);
}

// Saving copies the GPU's weights to the host: the file holds what the device holds.
TEST_F(CudaTrainStepHeads, SavedWeightsComeFromTheDevice) {
  StepCase gpu = open_case("distilbert-cls2-f32", kGpu, "full");
  train::TrainingStep step(*gpu.model, settings_of(gpu, false));
  (void)step.run(0, 1, source_of(gpu, 0), 1e-3);
  const std::string dir = ::testing::TempDir() + "/steps_saved";
  std::filesystem::remove_all(dir);
  train::save_hf_model(dir, *gpu.model, gpu.source.config_json, "single_label_classification", "");
  const auto file = model::SafetensorsFile::open(dir + "/model.safetensors");
  for (const auto& p : gpu.model->params.entries()) {
    const model::SafetensorsEntry* e = file.find(p.name);
    ASSERT_NE(e, nullptr) << p.name;
    EXPECT_EQ(scaled_error(file.tensor(*e).to(DType::f32), on_cpu(p.value)), 0.0) << p.name;
  }
}

// Without a GPU (any machine): what --device cuda says, and that nothing is built.

std::string tach_binary() { return std::string(TACH_BINARY_DIR) + "/tach"; }

// Runs tach with `args`; returns its exit status, its stderr and stdout in *output.
int run_tach(const std::string& args, std::string* output) {
  const std::string out = ::testing::TempDir() + "/steps_cli_output.txt";
  const int status = std::system((tach_binary() + " " + args + " > " + out + " 2>&1").c_str());
  *output = read_text(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// GTEST_SKIP returns from the function it is in: each test says it itself, not through a helper.
constexpr const char* kGpuHere = "a CUDA device is usable here: the errors without one cannot show";

TEST(CudaTrainStepsWithoutGpu, CudaIsAnErrorNamingWhy) {
  if (cuda_available()) GTEST_SKIP() << kGpuHere;
  const std::string e = error_of([] { (void)training_device("cuda"); });
  EXPECT_NE(e.find("--device cuda: no CUDA device here ("), std::string::npos) << e;
  EXPECT_NE(e.find(cuda_unavailable_reason()), std::string::npos) << e;
  EXPECT_NE(e.find("--device cpu"), std::string::npos) << "says what to do instead: " << e;
}

TEST(CudaTrainStepsWithoutGpu, AutoIsTheCpuAndSaysWhy) {
  if (cuda_available()) GTEST_SKIP() << kGpuHere;
  std::string why;
  EXPECT_EQ(training_device("auto", &why), Device::cpu());
  EXPECT_NE(why.find("device auto: cpu (no usable GPU: "), std::string::npos) << why;
}

TEST(CudaTrainStepsWithoutGpu, ADeviceThatIsNoneIsAnError) {
  EXPECT_NE(error_of([] { (void)training_device("tpu"); }).find("unknown device 'tpu'"), std::string::npos);
  EXPECT_EQ(training_device("cpu"), Device::cpu());
}

// The three commands that run training steps: the error, with the exit status of other bad input
// (1), before any run directory is made.
TEST(CudaTrainStepsWithoutGpu, TheCommandsSayWhyAndExitAsForBadInput) {
  if (cuda_available()) GTEST_SKIP() << kGpuHere;
  const std::string model = model_of("distilbert-cls2-f32");
  const std::string runs = ::testing::TempDir() + "/steps_cli_runs";
  std::filesystem::remove_all(runs);
  for (const std::string& args :
       {"train -m " + model + " -d " + fixtures_dir() + "/train/tiny.csv --device cuda --no-progress --runs-dir " +
            runs,
        "profile --train -m " + model + " -b 2 -s 8 --device cuda --profiler-output-dir " + runs + "/traces",
        "bench --train -m " + model + " -b 2 -s 8 --device cuda --no-progress --runs-dir " + runs}) {
    SCOPED_TRACE(args);
    std::string output;
    EXPECT_EQ(run_tach(args, &output), 1) << output;
    EXPECT_NE(output.find("no CUDA device here ("), std::string::npos) << output;
  }
  EXPECT_FALSE(std::filesystem::exists(runs)) << "nothing is written for a run that cannot start";
}

}  // namespace
}  // namespace tach::test
