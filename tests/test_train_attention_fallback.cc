// cuDNN refusing at run time a shape the training attention's choice accepted
// (ops/train_attention_kernel.h, run_cudnn_attention): the attention ops then run tach's kernels
// for that shape, once with a warning and for the rest of the process without trying cuDNN again,
// and the step's record (summary.json attention) names the shape and cuDNN's reason. The
// refusal is forced here, on the CPU: a call standing in for cuDNN's that throws as cuDNN's
// engines do, and TACH_TRAIN_ATTENTION=cudnn-refuses. (The CUDA path is test_cuda_train's
// CudaTrainCudnnFallback.) Each test uses shapes of its own: the record lives as long as the process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ops/train_attention_kernel.h"
#include "tach/error.h"
#include "test_util.h"
#include "train/train_step.h"
#include "train/training_model.h"

namespace tach::ops {
namespace {

bool mentions(const std::string& message, const std::string& what) { return message.find(what) != std::string::npos; }

CudnnAttentionShape shape(int64_t B, bool causal = true) {
  CudnnAttentionShape s;
  s.B = B, s.T = 48, s.H = 14, s.KVH = 2, s.D = 64, s.causal = causal;
  return s;
}

const char* kRefusal =
    "cuDNN fused attention forward: no cuDNN engine can run it here (cuDNN 91900); the first refusal: "
    "CUDNN_STATUS_NOT_SUPPORTED";

TEST(CudnnAttentionFallback, ARefusalFallsBackOnceWithAWarningAndIsRecorded) {
  const uint64_t mark = cudnn_attention_fallback_mark();
  int calls = 0;
  const auto refuses = [&] {
    ++calls;
    throw Error(kRefusal);
  };
  testing::internal::CaptureStderr();
  EXPECT_FALSE(run_cudnn_attention(shape(101), "forward", refuses)) << "refused: tach's kernels run it";
  EXPECT_FALSE(run_cudnn_attention(shape(101), "backward", refuses)) << "the same shape, the other direction";
  EXPECT_FALSE(run_cudnn_attention(shape(101), "forward", refuses));
  const std::string warned = testing::internal::GetCapturedStderr();
  EXPECT_EQ(calls, 1) << "cuDNN is not asked again for a shape it refused";
  EXPECT_EQ(warned,
            "warning: cuDNN's fused attention refused the forward of [101, 48, 14/2 heads x 64] causal at run time (" +
                std::string(kRefusal) + "); tach's own attention kernels (f32) run that shape from now on\n")
      << "one warning, at the refusal";

  // Another shape still runs cuDNN's.
  int other = 0;
  EXPECT_TRUE(run_cudnn_attention(shape(102), "forward", [&] { ++other; }));
  EXPECT_EQ(other, 1);

  const std::string record = cudnn_attention_fallbacks_since(mark);
  EXPECT_EQ(record, "tach kernels, f32 for [101, 48, 14/2 heads x 64] causal (cuDNN refused its forward at run time: " +
                        std::string(kRefusal) + ")");
  EXPECT_EQ(with_cudnn_attention_fallbacks("cudnn fused attention, bf16", mark),
            "cudnn fused attention, bf16; " + record);
  // A later mark (another run in the process) sees the shape again only once it falls back again.
  const uint64_t later = cudnn_attention_fallback_mark();
  EXPECT_EQ(with_cudnn_attention_fallbacks("cudnn fused attention, bf16", later), "cudnn fused attention, bf16");
  EXPECT_FALSE(run_cudnn_attention(shape(101), "forward", refuses));
  EXPECT_EQ(cudnn_attention_fallbacks_since(later), record);
}

// A shape is a graph's: the same sizes bidirectional are another shape.
TEST(CudnnAttentionFallback, TheRefusalHoldsForItsShapeOnly) {
  EXPECT_FALSE(run_cudnn_attention(shape(103), "backward", [] { throw Error("no workspace"); }));
  int ran = 0;
  EXPECT_TRUE(run_cudnn_attention(shape(103, false), "forward", [&] { ++ran; }));
  CudnnAttentionShape elsewhere = shape(103);
  elsewhere.device = 1;
  EXPECT_TRUE(run_cudnn_attention(elsewhere, "forward", [&] { ++ran; }));
  EXPECT_EQ(ran, 2);
}

// Ctrl-C during a cuDNN call stops the run: it is not a refusal.
TEST(CudnnAttentionFallback, StoppingIsNotARefusal) {
  const uint64_t mark = cudnn_attention_fallback_mark();
  EXPECT_THROW(run_cudnn_attention(shape(104), "forward", [] { throw Stopped("stopped"); }), Stopped);
  EXPECT_EQ(cudnn_attention_fallbacks_since(mark), "");
  int ran = 0;
  EXPECT_TRUE(run_cudnn_attention(shape(104), "forward", [&] { ++ran; }));
  EXPECT_EQ(ran, 1);
}

// TACH_TRAIN_ATTENTION=cudnn-refuses: the choice is auto's, and every cuDNN graph is refused when it
// runs (cuDNN is not called), so a GPU run shows the fallback on demand.
TEST(CudnnAttentionFallback, TheEnvironmentRefusesEveryGraphWhenItRuns) {
  EXPECT_EQ(train_attention_setting("cudnn-refuses"), TrainAttentionSetting::cudnn_refuses);
  EXPECT_FALSE(train_attention_forced_to_tach("cudnn-refuses")) << "the choice is still made";
  const uint64_t mark = cudnn_attention_fallback_mark();
  ::setenv("TACH_TRAIN_ATTENTION", "cudnn-refuses", 1);
  int calls = 0;
  testing::internal::CaptureStderr();
  const bool ran = run_cudnn_attention(shape(105), "forward", [&] { ++calls; });
  const std::string warned = testing::internal::GetCapturedStderr();
  ::unsetenv("TACH_TRAIN_ATTENTION");
  EXPECT_FALSE(ran);
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(mentions(warned, "(TACH_TRAIN_ATTENTION=cudnn-refuses)")) << warned;
  EXPECT_TRUE(mentions(cudnn_attention_fallbacks_since(mark),
                       "[105, 48, 14/2 heads x 64] causal (cuDNN refused its forward at run time: "
                       "TACH_TRAIN_ATTENTION=cudnn-refuses)"));
  const std::string e = test::error_of([] { train_attention_setting("cudnn"); });
  EXPECT_TRUE(mentions(e, "'auto'") && mentions(e, "'tach'") && mentions(e, "'cudnn-refuses'")) << e;
}

// The step's record (summary.json attention, a GPU point's train.precision) is its choice followed
// by the shapes that fell back since the step was made; a refusal before it was made is another
// run's.
TEST(CudnnAttentionFallback, TheStepsRecordNamesTheFallbacksSinceItWasMade) {
  EXPECT_FALSE(run_cudnn_attention(shape(106), "forward", [] { throw Error("before the step"); }));
  train::TrainingModelSource src = train::open_training_model(test::fixtures_dir() + "/decoders/qwen2-cls-kv1-f32", 0);
  const auto model = train::build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr,
                                                  Head::sequence_classification, Device::cpu());
  train::TrainingStep step(*model, train::StepSettings{});
  step.run(
      0, 1,
      [](int64_t, TokenBatch* b, train::Targets* t) {
        *b = TokenBatch::from_rows({{5, 17, 41}, {7, 90}}, 0);
        t->classes = {0, 1};
      },
      1e-3);
  const std::string choice = step.attention_kernels();
  EXPECT_EQ(choice, "tach kernels, f32 (cuDNN's fused attention runs on CUDA devices only)");
  EXPECT_FALSE(run_cudnn_attention(shape(107), "backward", [] { throw Error("CUDNN_STATUS_EXECUTION_FAILED"); }));
  EXPECT_EQ(step.attention_kernels(), choice +
                                          "; tach kernels, f32 for [107, 48, 14/2 heads x 64] causal (cuDNN refused "
                                          "its backward at run time: CUDNN_STATUS_EXECUTION_FAILED)");
}

}  // namespace
}  // namespace tach::ops
