// cuDNN refusing at run time the attention graph of a shape the choice accepted: forced with
// TACH_TRAIN_ATTENTION=cudnn-refuses, bf16 steps of an encoder (BERT-tiny, attention dropout on)
// and a grouped-query decoder (Qwen2-tiny) fall back to tach's own kernels for that shape (the
// layers' buffers hold cuDNN's log-sum-exp, so tach's backward recomputes the probabilities), say
// so in the step's record, and take the steps a run forced to tach's kernels takes. Skipped
// without a GPU or without cuDNN; the fallback itself is unit-tested on any machine
// (test_train_attention_fallback).
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "train/train_step.h"
#include "train/training_model.h"

#if TACH_HAS_CUDA
#include "cuda/cudnn_sdpa.h"
#endif

namespace tach::test {
namespace {

class CudaTrainCudnnFallback : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
#if TACH_HAS_CUDA
    std::string why;
    if (!cuda::cudnn_sdpa_available(&why)) GTEST_SKIP() << why;
#else
    GTEST_SKIP() << "built without CUDA";
#endif
  }
  void TearDown() override { ::unsetenv("TACH_TRAIN_ATTENTION"); }
};

// `steps` bf16 AdamW steps of a preset on one [3, 40] batch (a shape no other test of this
// binary trains, as a refusal holds for the process) under TACH_TRAIN_ATTENTION=setting: the
// losses, and the attention the step recorded.
std::vector<double> bf16_losses(const char* preset, const char* setting, int64_t steps, std::string* attention) {
  ::setenv("TACH_TRAIN_ATTENTION", setting, 1);
  train::TrainingModelSource source = train::open_training_model(std::string("preset:") + preset, 0);
  const auto model = train::build_trainable_model(source, source.id2label(), source.problem_type(), 0, nullptr,
                                                  Head::sequence_classification, kGpu);
  std::vector<std::vector<int32_t>> rows;
  train::Targets targets;
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<int32_t> row;
    for (int64_t t = 0; t < 40 - 5 * b; ++t) row.push_back(int32_t(5 + (b * 131 + t * 17) % 997));
    rows.push_back(row);
    targets.classes.push_back(int32_t(b % 2));
  }
  const TokenBatch batch = TokenBatch::from_rows(rows, 0);
  train::StepSettings settings;
  settings.precision = DType::bf16;
  settings.dropout = source.dropout(model->head());
  settings.dropout.seed = 5;
  train::TrainingStep step(*model, settings);
  std::vector<double> losses;
  for (int64_t i = 0; i < steps; ++i)
    losses.push_back(step.run(
                             i, 1,
                             [&](int64_t, TokenBatch* b, train::Targets* t) {
                               *b = batch;
                               *t = targets;
                             },
                             1e-4)
                         .loss);
  *attention = step.attention_kernels();
  ::unsetenv("TACH_TRAIN_ATTENTION");
  return losses;
}

TEST_F(CudaTrainCudnnFallback, ARefusedShapeRunsTachsKernelsAndSaysSo) {
  for (const char* preset : {"bert-tiny", "qwen2-tiny"}) {
    SCOPED_TRACE(preset);
    std::string forced, refused;
    const std::vector<double> want = bf16_losses(preset, "tach", 5, &forced);
    testing::internal::CaptureStderr();
    const std::vector<double> got = bf16_losses(preset, "cudnn-refuses", 5, &refused);
    const std::string warned = testing::internal::GetCapturedStderr();
    EXPECT_EQ(forced, "tach kernels, f32 (TACH_TRAIN_ATTENTION=tach)");
    EXPECT_EQ(refused.rfind("cudnn fused attention, bf16", 0), 0u) << refused;
    EXPECT_NE(refused.find("; tach kernels, f32 for [3, 40, "), std::string::npos) << refused;
    EXPECT_NE(refused.find("(cuDNN refused its forward at run time: TACH_TRAIN_ATTENTION=cudnn-refuses)"),
              std::string::npos)
        << refused;
    EXPECT_NE(warned.find("warning: cuDNN's fused attention refused the forward of [3, 40, "), std::string::npos)
        << warned;
    // tach's kernels on both sides: the same probabilities, saved (forced) or recomputed
    // (refused), so the same steps up to the order of nothing; 1e-6 leaves room for none.
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i])) << "step " << i;
  }
}

}  // namespace
}  // namespace tach::test
