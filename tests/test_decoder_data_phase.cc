// A decoder's training step reads its batch in the data phase only (TrainableDecoder::prepare_batch,
// on the host batch the collator made): the ids are checked there, a bad one named by row and
// position before any work on the device, and the rows the head reads (each row's last real token,
// ModernBERT's first token, the masked LM's chosen ones) are found there and taken by the forward,
// which then computes what it computes from a batch it was not prepared for, bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tach/error.h"
#include "test_util.h"
#include "train/train_step.h"
#include "train/trainable_decoder.h"
#include "train/training_model.h"

namespace tach::train {
namespace {

// A fixture's model on the CPU; src keeps what it was read from.
std::unique_ptr<TrainableModel> open_fixture(TrainingModelSource& src, const std::string& dir,
                                             Head head = Head::sequence_classification) {
  src = open_training_model(test::fixtures_dir() + "/" + dir, 0);
  return build_trainable_model(src, head == Head::masked_lm ? std::vector<std::string>{} : src.id2label(),
                               src.problem_type(), 0, nullptr, head, Device::cpu());
}

// Ids within the fixtures' 256-token vocabularies, padded with 0 (their pad_token_id) on the right,
// with a pad inside the first row too: its last real token is at 4, the second row's at 2.
TokenBatch padded_rows() { return TokenBatch::from_rows({{5, 17, 0, 41, 9, 0}, {7, 90, 3}}, 0); }

const DecoderActivations& activations(const ForwardState& s) { return dynamic_cast<const DecoderActivations&>(s); }

std::vector<float> logits(const ForwardState& s) {
  return {s.logits.data<float>(), s.logits.data<float>() + s.logits.numel()};
}

// Every trainable parameter's gradient after one forward and backward from d_logits = 0.01 (the
// parameters' gradients zeroed first).
std::vector<float> gradients(TrainableModel& model, ForwardState& state, const TokenBatch& batch) {
  model.params.zero_grad();
  model.forward(state, batch, DropoutRates{});
  std::vector<float> d(size_t(state.logits.numel()), 0.01f);
  model.backward(state, batch, d.data(), DropoutRates{});
  std::vector<float> all;
  for (const auto& p : model.params.entries())
    if (p.grad.defined()) all.insert(all.end(), p.grad.data<float>(), p.grad.data<float>() + p.grad.numel());
  return all;
}

TEST(DecoderDataPhase, ABadIdIsNamedByRowAndPositionInTheDataPhase) {
  TrainingModelSource src;
  const auto model = open_fixture(src, "decoders/qwen2-cls-kv1-f32");
  const std::string want = "input_ids[1][2] = 500 is outside the vocabulary of 256 tokens";
  const TokenBatch bad = TokenBatch::from_rows({{5, 17, 41, 3}, {7, 90, 500, 3}}, 0);
  const auto state = model->new_state(false);
  const std::string e = test::error_of([&] { model->prepare_batch(*state, bad); });
  EXPECT_NE(e.find(want), std::string::npos) << e;
  EXPECT_FALSE(activations(*state).prepared_head_rows.ready) << "a refused batch leaves nothing for the forward";
  // The forward of an unprepared batch checks it the same way.
  EXPECT_NE(test::error_of([&] { model->forward(*state, bad, DropoutRates{}); }).find(want), std::string::npos);
  TrainingStep step(*model, StepSettings{});
  const std::string in_step = test::error_of([&] {
    step.run(
        0, 1,
        [&](int64_t, TokenBatch* b, Targets* t) {
          *b = bad;
          t->classes = {0, 1};
        },
        1e-3);
  });
  EXPECT_NE(in_step.find(want), std::string::npos) << in_step;
}

// The last real token of each row (transformers' rule: the last id that is not pad_token_id), found
// in the host batch; the forward takes them, and its logits and every gradient are those of a
// forward that found them itself.
TEST(DecoderDataPhase, TheDataPhaseFindsTheRowsTheHeadReads) {
  for (const char* dir : {"decoders/qwen2-cls-kv1-f32", "decoders/modernbert-cls-mean-f32"}) {
    SCOPED_TRACE(dir);
    TrainingModelSource src;
    const auto model = open_fixture(src, dir);
    const TokenBatch batch = padded_rows();
    const auto prepared = model->new_state(false), plain = model->new_state(false);
    model->prepare_batch(*prepared, batch);
    const DecoderActivations::HeadRows& rows = activations(*prepared).prepared_head_rows;
    ASSERT_TRUE(rows.ready);
    EXPECT_EQ(rows.B, 2);
    EXPECT_EQ(rows.T, 6);
    const bool last_token = std::string(dir).find("qwen2") != std::string::npos;
    // ModernBERT pools the first token (and, here, the mean over the mask: its rows are unused).
    EXPECT_EQ(rows.rows, last_token ? (std::vector<int32_t>{4, 6 + 2}) : (std::vector<int32_t>{0, 6}));
    ASSERT_TRUE(rows.on_device.defined());
    EXPECT_EQ(std::vector<int32_t>(rows.on_device.data<int32_t>(), rows.on_device.data<int32_t>() + 2), rows.rows);

    const std::vector<float> want = gradients(*model, *plain, batch);
    const std::vector<float> want_logits = logits(*plain);
    const std::vector<float> got = gradients(*model, *prepared, batch);
    EXPECT_FALSE(activations(*prepared).prepared_head_rows.ready) << "the forward takes them";
    EXPECT_EQ(logits(*prepared), want_logits);
    EXPECT_EQ(got, want);
    EXPECT_EQ(activations(*prepared).head_rows, activations(*plain).head_rows);
  }
}

// A batch of another shape than the one prepared is refused by the forward, naming both.
TEST(DecoderDataPhase, TheForwardRefusesRowsPreparedForAnotherBatch) {
  TrainingModelSource src;
  const auto model = open_fixture(src, "decoders/qwen2-cls-kv1-f32");
  const auto state = model->new_state(false);
  model->prepare_batch(*state, padded_rows());
  const TokenBatch other = TokenBatch::from_rows({{5, 17, 41}, {7, 90, 3}}, 0);
  const std::string e = test::error_of([&] { model->forward(*state, other, DropoutRates{}); });
  EXPECT_NE(e.find("the data phase's head rows are for a [2, 6] batch"), std::string::npos) << e;
}

// The masked LM's chosen tokens (set by the data phase before the model's part) are the rows its
// head runs on, checked against the batch there.
TEST(DecoderDataPhase, TheMaskedLmsChosenRowsAreCheckedInTheDataPhase) {
  TrainingModelSource src;
  const auto model = open_fixture(src, "train_tasks/modernbert-mlm-f32/model", Head::masked_lm);
  const TokenBatch batch = padded_rows();
  const auto state = model->new_state(false);
  state->predicted_rows = {1, 7, 9};
  model->prepare_batch(*state, batch);
  EXPECT_EQ(activations(*state).prepared_head_rows.rows, (std::vector<int32_t>{1, 7, 9}));
  model->forward(*state, batch, DropoutRates{});
  EXPECT_EQ(state->logits.size(0), 3);
  state->predicted_rows = {1, 12};
  const std::string e = test::error_of([&] { model->prepare_batch(*state, batch); });
  EXPECT_NE(e.find("masked LM: predicted row 12 is outside the batch's 12 tokens"), std::string::npos) << e;
}

}  // namespace
}  // namespace tach::train
