// What a run hands its step: the model's device from the options (refused clearly where no
// training kernel runs), the micro-batch moved to that device once in the step's data phase
// (no copy on the CPU), and the GEMMs' precision taken from the step's settings, not from
// whatever the caller left set.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu/train_gemm.h"
#include "tach/error.h"
#include "tach/train.h"
#include "test_util.h"
#include "train/train_step.h"
#include "train/training_model.h"

namespace tach::train {
namespace {

const std::string kBert = "encoders/bert-cls2-f32";

std::unique_ptr<TrainableModel> bert(TrainingModelSource& src, Device device = Device::cpu()) {
  src = open_training_model(test::fixtures_dir() + "/" + kBert, 0);
  return build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr, Head::sequence_classification,
                               device);
}

// Ids within the fixture's 120-token vocabulary: 4 and 3 real tokens.
TokenBatch two_rows() { return TokenBatch::from_rows({{2, 17, 41, 3}, {2, 90, 3}}, 0); }

TEST(TrainRunDevice, TheModelTakesTheOptionsDevice) {
  TrainingModelSource src;
  EXPECT_EQ(bert(src)->device, Device::cpu());
  EXPECT_EQ(TrainOptions{}.device, Device::cpu()) << "the CPU unless a run says otherwise";
}

// On a GPU every parameter and gradient is there; without one the build is refused, naming why,
// before any work.
TEST(TrainRunDevice, AGpuModelLivesOnItsGpuAndAMissingOneIsRefused) {
  TrainingModelSource src;
  if (!cuda_available()) {
    const std::string e = test::error_of([&] { bert(src, Device::cuda(0)); });
    EXPECT_NE(e.find("training on cuda:0: no CUDA device here (" + cuda_unavailable_reason()), std::string::npos) << e;
    return;
  }
  const auto model = bert(src, Device::cuda(0));
  EXPECT_EQ(model->device, Device::cuda(0));
  for (const auto& p : model->params.entries()) {
    EXPECT_EQ(p.value.device(), Device::cuda(0)) << p.name;
    if (p.grad.defined()) { EXPECT_EQ(p.grad.device(), Device::cuda(0)) << p.name; }
  }
}

TEST(TrainRunData, MovingABatchToItsOwnDeviceCopiesNothing) {
  TokenBatch b = two_rows();
  b.token_type_ids = Tensor::zeros(b.input_ids.shape(), DType::i32);
  const void* ids = b.input_ids.raw();
  const void* mask = b.attention_mask.raw();
  const void* types = b.token_type_ids.raw();
  b = b.on(Device::cpu());
  EXPECT_EQ(b.input_ids.raw(), ids);
  EXPECT_EQ(b.attention_mask.raw(), mask);
  EXPECT_EQ(b.token_type_ids.raw(), types);
  TokenBatch no_types = two_rows();
  no_types = no_types.on(Device::cpu());
  EXPECT_FALSE(no_types.token_type_ids.defined()) << "an absent tensor stays absent";
}

TEST(TrainRunData, EveryMicroBatchIsCountedFromItsCollatedMask) {
  TrainingModelSource src;
  auto model = bert(src);
  TrainingStep step(*model, StepSettings{});
  int calls = 0;
  const StepOutcome out = step.run(
      0, 2,
      [&](int64_t, TokenBatch* b, Targets* t) {
        ++calls;
        *b = two_rows();
        t->classes = {0, 1};
      },
      1e-3);
  EXPECT_TRUE(out.updated);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(out.rank_tokens, 2 * 7);
  EXPECT_EQ(out.rank_samples, 4);
}

// The data phase checks the batch where the collator made it (host memory): a bad id is an error
// naming its row and position, as the forward's own check names it, before any work on the device.
TEST(TrainRunData, ABadIdIsNamedByRowAndPositionInTheDataPhase) {
  TrainingModelSource src;
  auto model = bert(src);
  const std::string want = "input_ids[1][2] = 500 is outside the vocabulary of 120 tokens";
  const TokenBatch bad = TokenBatch::from_rows({{2, 17, 41, 3}, {2, 90, 500, 3}}, 0);
  const auto state = model->new_state(false);
  EXPECT_NE(test::error_of([&] { model->prepare_batch(*state, bad); }).find(want), std::string::npos);
  EXPECT_FALSE(state->prepared_position_ids.defined()) << "a refused batch leaves nothing for the forward";
  TrainingStep step(*model, StepSettings{});
  const std::string e = test::error_of([&] {
    step.run(
        0, 1,
        [&](int64_t, TokenBatch* b, Targets* t) {
          *b = bad;
          t->classes = {0, 1};
        },
        1e-3);
  });
  EXPECT_NE(e.find(want), std::string::npos) << e;
}

// RoBERTa's position ids (counting the tokens that are not padding, pads at padding_idx, here 1 and
// one inside a row) are made by the data phase and uploaded with the batch; the forward takes them
// instead of reading the ids back, and computes what it computes from its own.
TEST(TrainRunData, TheDataPhaseMakesThePositionsTheForwardReads) {
  TrainingModelSource src;
  src = open_training_model(test::fixtures_dir() + "/encoders/roberta-cls2-f32", 0);
  const auto model = build_trainable_model(src, src.id2label(), src.problem_type(), 0, nullptr,
                                           Head::sequence_classification, Device::cpu());
  const TokenBatch batch = TokenBatch::from_rows({{0, 17, 1, 41, 2}, {0, 90, 2}}, 1);
  const auto prepared = model->new_state(false), plain = model->new_state(false);
  model->prepare_batch(*prepared, batch);
  const Tensor& positions = prepared->prepared_position_ids;
  ASSERT_TRUE(positions.defined());
  EXPECT_EQ(std::vector<int32_t>(positions.data<int32_t>(), positions.data<int32_t>() + positions.numel()),
            (std::vector<int32_t>{2, 3, 1, 4, 5, 2, 3, 4, 1, 1}));
  model->forward(*prepared, batch, DropoutRates{});
  EXPECT_FALSE(prepared->prepared_position_ids.defined()) << "the forward takes them: the next batch makes its own";
  model->forward(*plain, batch, DropoutRates{});
  ASSERT_EQ(prepared->logits.numel(), plain->logits.numel());
  for (int64_t i = 0; i < plain->logits.numel(); ++i)
    EXPECT_EQ(prepared->logits.data<float>()[i], plain->logits.data<float>()[i]) << i;
}

TEST(TrainRunPrecision, TheStepRunsAtItsSettingsPrecision) {
  TrainingModelSource src;
  auto model = bert(src);
  for (DType precision : {DType::bf16, DType::f32}) {
    StepSettings s;
    s.precision = precision;
    TrainingStep step(*model, s);
    cpu::TrainPrecision seen = cpu::TrainPrecision::f32;
    // The caller's own setting is the other one: the step's settings win, and it is restored after.
    const cpu::TrainPrecision outside = precision == DType::bf16 ? cpu::TrainPrecision::f32 : cpu::TrainPrecision::bf16;
    const cpu::TrainPrecisionScope caller(outside);
    step.run(
        0, 1,
        [&](int64_t, TokenBatch* b, Targets* t) {
          seen = cpu::train_precision();  // the data phase runs inside the step
          *b = two_rows();
          t->classes = {0, 1};
        },
        1e-3);
    EXPECT_EQ(seen, precision == DType::bf16 ? cpu::TrainPrecision::bf16 : cpu::TrainPrecision::f32);
    EXPECT_EQ(cpu::train_precision(), outside);
  }
}

TEST(TrainRunPrecision, AnotherDtypeIsRefusedNamingIt) {
  const std::string e = test::error_of([] { GemmPrecisionScope s(DType::f16); });
  EXPECT_NE(e.find("f32 or bf16, not f16"), std::string::npos) << e;
  EXPECT_EQ(training_gemm_description(DType::f32), "f32");
  EXPECT_NE(training_gemm_description(DType::bf16).find("bf16"), std::string::npos);
}

// A GPU run's config.json and note name the GPU's GEMM, not the CPU's oneDNN.
TEST(TrainRunPrecision, AGpuRunNamesItsOwnGemm) {
  EXPECT_EQ(training_gemm_description(DType::bf16, Device::cuda(0)), "bf16 inputs, f32 accumulation (cuBLASLt)");
  EXPECT_EQ(training_gemm_description(DType::f32, Device::cuda(0)), "f32");
  const std::string note = bf16_training_note(Device::cuda(0));
  EXPECT_NE(note.find("cuBLASLt on cuda:0"), std::string::npos) << note;
  EXPECT_EQ(note.find("oneDNN"), std::string::npos) << note;
}

}  // namespace
}  // namespace tach::train
