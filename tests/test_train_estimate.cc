// tach estimate --mode train-full against what tach train's allocator measured: within 10%.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/estimate.h"
#include "tach/train.h"
#include "test_util.h"

namespace tach {
namespace {

// Trains `model` for 3 steps at batches 8 and 32 of 64 tokens and compares the measured peak with
// the estimate.
void expect_estimate_within_ten_percent(const std::string& model, const std::string& tokenizer) {
  test::TempDir dir;
  for (int64_t batch : {8, 32}) {
    TrainOptions o;
    o.model = model;
    o.tokenizer = test::shared_dir() + "/tokenizers/" + tokenizer;
    o.data.path = test::shared_dir() + "/data/sst2/dev.tsv";
    o.max_steps = 3;
    o.batch_size = batch;
    o.max_length = 64;
    o.padding = "max_length";
    o.runs_dir = dir.path();
    o.run_id = "b" + std::to_string(batch);
    const TrainResult r = run_training(o);
    std::ifstream in(r.run_dir + "/summary.json");
    const int64_t measured = nlohmann::json::parse(in)["memory_peak_bytes"]["total"].get<int64_t>();

    EstimateInput e;
    e.model = model;
    e.batch = batch;
    e.seq_len = 64;
    e.mode = "train-full";
    const MemoryEstimate est = estimate_memory(e);
    const double ratio = double(est.total_bytes) / double(measured);
    std::printf("%s batch %lld: estimate %lld B, measured %lld B (ratio %.3f)\n", model.c_str(), (long long)batch,
                (long long)est.total_bytes, (long long)measured, ratio);
    EXPECT_NEAR(ratio, 1.0, 0.10) << model << " batch " << batch << ": estimate " << est.total_bytes
                                  << " B, measured peak " << measured << " B";
  }
}

TEST(TrainEstimate, FullFineTuningPeakWithinTenPercent) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared (tokenizer and SST-2) is absent";
  expect_estimate_within_ten_percent("preset:bert-tiny", "bert-base-uncased");
}

TEST(TrainEstimate, Qwen2FullFineTuningPeakWithinTenPercent) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared (tokenizer and SST-2) is absent";
  expect_estimate_within_ten_percent("preset:qwen2-tiny", "qwen2.5");
}

}  // namespace
}  // namespace tach
