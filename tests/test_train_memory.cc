// One training point's memory, one definition: tach's allocator peak over the steps, with the
// model built and the checkpoint it was built from released. bench --train, tach train and tach
// estimate agree on it for the same configuration, and LoRA adapts the same linears in all three
// (the family's default targets: every linear of a layer).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/bench.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "tach/train.h"
#include "test_util.h"

namespace tach {
namespace {

struct Measured {
  int64_t peak = 0, trainable = 0;
};

// bench --train: one point, synthetic full rows of T tokens.
Measured bench_point(const std::string& model, const std::string& method, int64_t B, int64_t T, const std::string& runs,
                     const std::string& dtype = "f32") {
  BenchConfig c = train_sweep_defaults();
  c.dtypes = {dtype};
  c.model = model;
  c.batch_sizes = {B};
  c.seq_lens = {T};
  c.train.methods = {method};
  c.train.execs = {"eager"};
  c.train.gradient_checkpointing = {false};
  c.warmup_runs = 1;
  c.stop.runs = 3;
  c.runs_dir = runs;
  c.run_id = "bench-" + method + "-" + dtype;
  const SweepOutcome o = run_bench(c);
  EXPECT_EQ(o.results.size(), 1u);
  if (o.results.empty()) return {};
  const PointResult& p = o.results.front();
  EXPECT_EQ(p.status, "ok") << p.reason;
  const auto it = p.allocator.find("total");
  return {it == p.allocator.end() ? 0 : it->second.peak, p.train.trainable_parameters};
}

// tach train: 3 steps of B rows padded to T tokens, no evaluation.
Measured train_run(const std::string& model, const std::string& method, int64_t B, int64_t T, const std::string& runs,
                   const std::string& dtype = "f32", int64_t* planned = nullptr) {
  TrainOptions o;
  o.dtype = dtype;
  o.model = model;
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.max_steps = 3;
  o.batch_size = B;
  o.max_length = T;
  o.padding = "max_length";
  o.method = method;
  o.tensorboard = false;
  o.runs_dir = runs;
  o.run_id = "train-" + method + "-" + dtype;
  const TrainResult r = run_training(o);
  std::ifstream in(r.run_dir + "/summary.json");
  const nlohmann::json s = nlohmann::json::parse(in);
  EXPECT_TRUE(s.contains("trainable_parameters")) << "summary.json lacks trainable_parameters";
  EXPECT_TRUE(s.contains("nf4_weight_bytes")) << "summary.json lacks nf4_weight_bytes";
  // On the CPU the attention runs tach's kernels, and the run says so and why.
  EXPECT_EQ(s.value("attention", ""), "tach kernels, f32 (cuDNN's fused attention runs on CUDA devices only)");
  EXPECT_TRUE(s.contains("memory_plan") && s["memory_plan"].contains("planned_activation_bytes"))
      << "summary.json lacks the planned activations";
  if (planned && s.contains("memory_plan") && s["memory_plan"].is_object())
    *planned = s["memory_plan"].value("estimate_bytes", int64_t(0));
  return {s["memory_peak_bytes"]["total"].get<int64_t>(), s.value("trainable_parameters", int64_t(0))};
}

MemoryEstimate estimate(const std::string& model, const std::string& method, int64_t B, int64_t T,
                        const std::string& dtype = "f32") {
  EstimateInput e;
  e.dtype = dtype;
  e.model = model;
  e.batch = B;
  e.seq_len = T;
  e.mode = "train-" + method;
  return estimate_memory(e);  // the default LoRA targets, as the two runs
}

// The configuration of the report: LoRA on bert-tiny at batch 2 x 32 (bench said 242% of the
// estimate); full fine-tuning alike.
TEST(TrainMemory, BenchTrainAndEstimateAgreeOnAPoint) {
  test::TempDir dir;
  for (const std::string method : {"lora", "full"}) {
    const Measured bench = bench_point("preset:bert-tiny", method, 2, 32, dir.path());
    const Measured train = train_run("preset:bert-tiny", method, 2, 32, dir.path());
    const MemoryEstimate est = estimate("preset:bert-tiny", method, 2, 32);
    std::printf("%s: bench --train %lld B, tach train %lld B, tach estimate %lld B\n", method.c_str(),
                (long long)bench.peak, (long long)train.peak, (long long)est.total_bytes);
    // The same steps on the same model: the two measurements within 5% (the rows' ids differ).
    EXPECT_NEAR(double(bench.peak) / double(train.peak), 1.0, 0.05) << method;
    // The estimate within 10% of each, as tach estimate promises against tach train.
    EXPECT_NEAR(double(est.total_bytes) / double(train.peak), 1.0, 0.10) << method;
    EXPECT_NEAR(double(est.total_bytes) / double(bench.peak), 1.0, 0.10) << method;
    // One set of LoRA targets: the same trainable parameters in all three.
    EXPECT_EQ(bench.trainable, train.trainable) << method;
    EXPECT_EQ(est.trainable_parameters, train.trainable) << method;
  }
}

// bf16 training is mixed precision: f32 weights, gradients, AdamW and activations, bf16-rounded
// GEMM inputs. Its peak is f32's, and the estimate (and train's own memory_plan) must say so: it
// once counted the weights in bf16 and planned about half the measured peak.
TEST(TrainMemory, Bf16TrainingAgreesWithItsEstimate) {
  test::TempDir dir;
  for (const std::string method : {"lora", "full", "qlora"}) {
    const Measured bench = bench_point("preset:bert-tiny", method, 2, 32, dir.path(), "bf16");
    int64_t planned = 0;
    const Measured train = train_run("preset:bert-tiny", method, 2, 32, dir.path(), "bf16", &planned);
    const MemoryEstimate est = estimate("preset:bert-tiny", method, 2, 32, "bf16");
    std::printf("%s bf16: bench --train %lld B, tach train %lld B (its plan %lld B), tach estimate %lld B\n",
                method.c_str(), (long long)bench.peak, (long long)train.peak, (long long)planned,
                (long long)est.total_bytes);
    EXPECT_NEAR(double(bench.peak) / double(train.peak), 1.0, 0.05) << method;
    EXPECT_NEAR(double(est.total_bytes) / double(train.peak), 1.0, 0.10) << method;
    EXPECT_NEAR(double(est.total_bytes) / double(bench.peak), 1.0, 0.10) << method;
    EXPECT_EQ(planned, est.total_bytes) << method << ": summary.json's memory_plan is the estimate";
    EXPECT_EQ(est.trainable_parameters, train.trainable) << method;
    // The dtype changes the GEMMs' inputs, not what is stored: the f32 estimate to the byte.
    EXPECT_EQ(est.total_bytes, estimate("preset:bert-tiny", method, 2, 32).total_bytes) << method;
  }
}

// The estimate's default LoRA targets are tach train's on a decoder too (gate, up and down).
TEST(TrainMemory, EstimateCountsTheLinearsTrainAdapts) {
  test::TempDir dir;
  const Measured bench = bench_point("preset:qwen2-tiny", "lora", 1, 16, dir.path());
  const MemoryEstimate est = estimate("preset:qwen2-tiny", "lora", 1, 16);
  EXPECT_EQ(est.trainable_parameters, bench.trainable);
  EXPECT_EQ(est.lora_targets, (std::vector<std::string>{"q", "k", "v", "o", "up", "down", "gate"}));
}

// ModernBERT's default targets are its fused linears (Wqkv, Wo, Wi, Wo and the head's dense): one
// adapter of the fused width each, as tach train adapts them, not q, k, v, gate and up apart.
TEST(TrainMemory, EstimateCountsModernBertsFusedAdapters) {
  test::TempDir dir;
  const std::string model = test::fixtures_dir() + "/decoders/modernbert-cls-mean-f32";
  const Measured bench = bench_point(model, "lora", 1, 16, dir.path());
  EXPECT_EQ(estimate(model, "lora", 1, 16).trainable_parameters, bench.trainable);
}

// A row past the positions is refused, naming them; at the positions it is estimated.
TEST(TrainMemory, EstimateRefusesRowsPastThePositions) {
  EstimateInput e;
  e.model = "preset:bert-tiny";
  e.seq_len = 100000;
  try {
    (void)estimate_memory(e);
    FAIL() << "100000 tokens on a 512-position model were estimated";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("past preset:bert-tiny's 512 positions"), std::string::npos) << err.what();
  }
  e.seq_len = 512;
  EXPECT_GT(estimate_memory(e).total_bytes, 0);
}

// RoBERTa's position ids start after padding_idx: of its 514 positions a row takes 512, as the
// loader checks. The estimate refuses 513 tokens as tach would, and takes 512.
TEST(TrainMemory, EstimateTakesTheRowsTheLoaderTakes) {
  EstimateInput e;
  e.model = "preset:roberta-base";
  e.seq_len = 513;
  try {
    (void)estimate_memory(e);
    FAIL() << "513 tokens on RoBERTa (512 usable positions) were estimated";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("past preset:roberta-base's 512 positions"), std::string::npos)
        << err.what();
  }
  e.seq_len = 512;
  EXPECT_GT(estimate_memory(e).total_bytes, 0);
}

}  // namespace
}  // namespace tach
