// --allow-tf32: the switch kept where a run is recorded (config.json, results lines, the model's
// compute note), refused on a CPU, judged against the TF32 ceiling, and said by tach compare when
// two runs differ in it. (test_cuda_ops.cc: the TF32 GEMM's numbers on a GPU.)
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/bench_internal.h"
#include "model/compute_note.h"
#include "ops/linear.h"
#include "tach/bench.h"
#include "tach/compare.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/profile.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;

TEST(Tf32, ConfigJsonKeepsTheSwitch) {
  BenchConfig c;
  c.devices = {"cuda"};
  c.allow_tf32 = true;
  const std::string text = bench_config_to_json(c);
  EXPECT_TRUE(nlohmann::json::parse(text).at("allow_tf32").get<bool>()) << text;
  EXPECT_TRUE(bench_config_from_json(text, "config.json").allow_tf32);
  // A config.json written before the switch: full f32, as those runs ran.
  nlohmann::json old = nlohmann::json::parse(bench_config_to_json(BenchConfig{}));
  old.erase("allow_tf32");
  EXPECT_FALSE(bench_config_from_json(old.dump(), "config.json").allow_tf32);
  // The YAML file's model section takes it too, and a value that is no bool names the key.
  EXPECT_TRUE(bench_config_from_yaml_text("model:\n  device: cuda\n  allow_tf32: true\n", "c.yaml").allow_tf32);
  const std::string e =
      test::error_of([] { (void)bench_config_from_yaml_text("model:\n  allow_tf32: maybe\n", "c.yaml"); });
  EXPECT_NE(e.find("model.allow_tf32"), std::string::npos) << e;
}

TEST(Tf32, ResultsLineKeepsThePointsPrecision) {
  PointResult p;
  p.key.device = "cuda:0";
  p.gemm_tf32 = true;
  const std::string line = point_to_json(p);
  EXPECT_TRUE(point_from_json(line, "results.jsonl:1").gemm_tf32) << line;
  nlohmann::json old = nlohmann::json::parse(line);
  old.erase("gemm_tf32");  // a line written before the switch
  EXPECT_FALSE(point_from_json(old.dump(), "results.jsonl:1").gemm_tf32);
}

TEST(Tf32, ComputeNoteSaysTf32OnlyWhereItApplies) {
  const std::string note = model::compute_note(DType::f32, Device::cuda(0), false, true);
  EXPECT_EQ(note, model::kTf32Note);
  EXPECT_NE(note.find("10 mantissa bits"), std::string::npos) << note;
  EXPECT_NE(note.find("--allow-tf32"), std::string::npos) << note;
  EXPECT_EQ(model::compute_note(DType::f32, Device::cuda(0), false, false), "");
  EXPECT_EQ(model::compute_note(DType::bf16, Device::cuda(0), false, true), "") << "bf16 GEMMs are not f32's";
}

TEST(Tf32, ACpuRefusesIt) {
  LoadOptions lo;
  lo.allow_tf32 = true;
  try {
    (void)load_model("preset:bert-tiny", lo);
    FAIL() << "a CPU model loaded with allow_tf32";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--allow-tf32"), std::string::npos) << e.what();
  }
  // The op itself refuses it too: no CPU GEMM has TF32.
  const Tensor w = Tensor::zeros({4, 8}, DType::f32);
  const std::string e = test::error_of([&] { ops::Linear l(w, Tensor(), {Device::cpu(), DType::f32, false, true}); });
  EXPECT_NE(e.find("TF32"), std::string::npos) << e;
}

TEST(Tf32, TheRooflineJudgesTf32GemmsAgainstTheTf32Ceiling) {
  GpuCeilings g;
  g.gemm_f32_flops = 50e12;
  g.gemm_tf32_flops = 400e12;
  g.gemm_bf16_flops = 800e12;
  EXPECT_EQ(as_machine_ceilings(g).gemm_f32_flops, 50e12);
  const MachineCeilings tf32 = as_machine_ceilings(g, true);
  EXPECT_EQ(tf32.gemm_f32_flops, 400e12);
  EXPECT_EQ(tf32.gemm_bf16_flops, 800e12);
  EXPECT_NE(tf32.method.find("TF32"), std::string::npos) << tf32.method;
}

// A point of `samples` latencies around `ms` (deterministic).
PointResult point(const std::string& device, int64_t batch, double ms, uint32_t seed) {
  PointResult p;
  p.key.device = device;
  p.key.batch = batch;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.02, 0.02);
  for (int i = 0; i < 20; ++i) p.batch_latency_samples_ms.push_back(ms * (1 + u(rng)));
  p.batch_latency_ms = bench::distribution(p.batch_latency_samples_ms);
  p.measured_runs = 20;
  return p;
}

std::string write_run(const test::TempDir& root, const std::string& name, bool tf32) {
  const std::string dir = root.path() + "/" + name;
  fs::create_directories(dir);
  test::write_text(dir + "/results.jsonl", point_to_json(point("cuda:0", 32, tf32 ? 5 : 10, 1)) + "\n" +
                                               point_to_json(point("cpu", 32, 100, 2)) + "\n");
  BenchConfig c;
  c.run_id = name;
  c.allow_tf32 = tf32;
  test::write_text(dir + "/config.json", bench_config_to_json(c));
  return dir;
}

// bf16 activations end to end on one side, f32 activations around bf16 GEMMs on the other
// (TACH_GPU_ACTIVATIONS=f32): each changed point says so.
TEST(Tf32, CompareSaysWhenThePointsActivationsDiffer) {
  test::TempDir root;
  const auto run = [&](const std::string& name, const std::string& activations, double ms) {
    const std::string dir = root.path() + "/" + name;
    fs::create_directories(dir);
    PointResult p = point("cuda:0", 32, ms, 1);
    p.key.dtype = "bf16";
    p.activations = activations;
    test::write_text(dir + "/results.jsonl", point_to_json(p) + "\n");
    BenchConfig c;
    c.run_id = name;
    test::write_text(dir + "/config.json", bench_config_to_json(c));
    return dir;
  };
  const RunComparison c = compare_runs({run("f32-activations", "f32", 10), run("bf16-activations", "bf16", 5)});
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_NE(c.changes[0].why.find("activations f32 in the baseline, bf16 here"), std::string::npos) << c.changes[0].why;
  const RunComparison same = compare_runs({run("a", "bf16", 10), run("b", "bf16", 5)});
  ASSERT_EQ(same.changes.size(), 1u);
  EXPECT_EQ(same.changes[0].why.find("activations"), std::string::npos) << same.changes[0].why;
}

TEST(Tf32, CompareSaysWhenOneRunUsedTf32) {
  test::TempDir root;
  const std::string plain = write_run(root, "plain", false), tf32 = write_run(root, "tf32", true);
  const RunComparison c = compare_runs({plain, tf32});
  ASSERT_EQ(c.settings_differ.size(), 1u);
  EXPECT_NE(c.settings_differ[0].find("TF32"), std::string::npos) << c.settings_differ[0];
  for (const PointChange& ch : c.changes) {
    const bool gpu = ch.id.rfind("cuda", 0) == 0;
    EXPECT_EQ(ch.why.find("TF32 GEMMs on one side only") != std::string::npos, gpu) << ch.id << ": " << ch.why;
  }
  const std::string text = comparison_text(c, "table");
  EXPECT_NE(text.find("SETTINGS DIFFER"), std::string::npos) << text;
  EXPECT_NE(text.find("f32 GEMMs on TF32 (--allow-tf32)"), std::string::npos) << text;
  EXPECT_EQ(nlohmann::json::parse(comparison_text(c, "json")).at("settings_differ").size(), 1u);
  // Two runs alike: nothing said.
  const RunComparison same = compare_runs({plain, plain});
  EXPECT_TRUE(same.settings_differ.empty());
  EXPECT_EQ(comparison_text(same, "table").find("SETTINGS DIFFER"), std::string::npos);
}

}  // namespace
}  // namespace tach
