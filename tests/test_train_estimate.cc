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

TEST(TrainEstimate, FullFineTuningPeakWithinTenPercent) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared (tokenizer and SST-2) is absent";
  test::TempDir dir;
  for (int64_t batch : {8, 32}) {
    TrainOptions o;
    o.model = "preset:bert-tiny";
    o.tokenizer = test::shared_dir() + "/tokenizers/bert-base-uncased";
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
    e.model = "preset:bert-tiny";
    e.batch = batch;
    e.seq_len = 64;
    e.mode = "train-full";
    const MemoryEstimate est = estimate_memory(e);
    const double ratio = double(est.total_bytes) / double(measured);
    std::printf("batch %lld: estimate %lld B, measured %lld B (ratio %.3f)\n", (long long)batch,
                (long long)est.total_bytes, (long long)measured, ratio);
    EXPECT_NEAR(ratio, 1.0, 0.10) << "batch " << batch << ": estimate " << est.total_bytes << " B, measured peak "
                                  << measured << " B";
  }
}

}  // namespace
}  // namespace tach
