// Training the per-token heads: masked-LM inputs as DataCollatorForLanguageModeling makes them,
// word labels aligned to sub-tokens as run_ner does, and question-answering windows and answer
// positions as run_qa's prepare_train_features makes them.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <vector>

#include "train/loss.h"
#include "train/mlm_masking.h"
#include "train/token_labels.h"

namespace tach {
namespace {

train::MlmMasking bert_masking() {
  train::MlmMasking m;
  m.mask_token_id = 103;
  m.vocab_size = 1000;
  return m;
}

// Rows of 64 tokens, ids 200.., with [CLS] first, [SEP] at 50 and padding after it.
struct Row {
  std::vector<int32_t> ids, special, labels;
};
Row make_row() {
  Row r;
  for (int i = 0; i < 64; ++i) {
    const bool pad = i > 50;
    r.ids.push_back(i == 0 ? 101 : i == 50 ? 102 : pad ? 0 : 200 + i);
    r.special.push_back(i == 0 || i >= 50 ? 1 : 0);
  }
  r.labels.resize(r.ids.size());
  return r;
}

TEST(MlmMasking, FifteenPercentChosenThenEightyTenTen) {
  const train::MlmMasking m = bert_masking();
  int64_t candidates = 0, chosen = 0, masked = 0, kept = 0, random = 0;
  for (int64_t example = 0; example < 2000; ++example) {
    Row r = make_row();
    const Row original = r;
    chosen +=
        train::mask_tokens(r.ids.data(), r.labels.data(), r.special.data(), 64, m, train::mlm_mask_key(42, 0, example));
    for (size_t i = 0; i < r.ids.size(); ++i) {
      if (original.special[i]) {
        // Special tokens and padding are never chosen, and keep their ids.
        EXPECT_EQ(r.labels[i], train::kIgnoreIndex);
        EXPECT_EQ(r.ids[i], original.ids[i]);
        continue;
      }
      ++candidates;
      if (r.labels[i] == train::kIgnoreIndex) {
        EXPECT_EQ(r.ids[i], original.ids[i]) << "a token not chosen is left as it is";
        continue;
      }
      EXPECT_EQ(r.labels[i], original.ids[i]) << "a chosen token's label is its own id";
      if (r.ids[i] == 103) ++masked;
      else if (r.ids[i] == original.ids[i]) ++kept;
      else ++random;
    }
  }
  EXPECT_EQ(chosen, masked + kept + random);
  // 98,000 candidates: the 15% within 0.5 points; of ~14,700 chosen, 80/10/10 within 1.5 points.
  // (A random token can equal the original, 1 in 1000: counted as kept.)
  EXPECT_NEAR(double(chosen) / double(candidates), 0.15, 0.005);
  EXPECT_NEAR(double(masked) / double(chosen), 0.8, 0.015);
  EXPECT_NEAR(double(random) / double(chosen), 0.1, 0.015);
  EXPECT_NEAR(double(kept) / double(chosen), 0.1, 0.015);
}

TEST(MlmMasking, SeededPerExampleAndEpoch) {
  const train::MlmMasking m = bert_masking();
  auto masks = [&](uint64_t seed, int64_t epoch, int64_t example) {
    Row r = make_row();
    train::mask_tokens(r.ids.data(), r.labels.data(), r.special.data(), 64, m,
                       train::mlm_mask_key(seed, epoch, example));
    return r.ids;
  };
  EXPECT_EQ(masks(42, 0, 3), masks(42, 0, 3));
  EXPECT_NE(masks(42, 0, 3), masks(42, 1, 3)) << "a new epoch re-masks (dynamic masking)";
  EXPECT_NE(masks(42, 0, 3), masks(42, 0, 4));
  EXPECT_NE(masks(42, 0, 3), masks(43, 0, 3));
}

TEST(MlmMasking, ProbabilityIsHonoured) {
  train::MlmMasking m = bert_masking();
  m.probability = 0.4;
  int64_t chosen = 0, candidates = 0;
  for (int64_t example = 0; example < 500; ++example) {
    Row r = make_row();
    chosen +=
        train::mask_tokens(r.ids.data(), r.labels.data(), r.special.data(), 64, m, train::mlm_mask_key(7, 0, example));
    candidates += 49;
  }
  EXPECT_NEAR(double(chosen) / double(candidates), 0.4, 0.02);
}

TEST(MlmMasking, BadSettingsAreNamed) {
  train::MlmMasking m = bert_masking();
  m.probability = 1.5;
  EXPECT_THROW(
      {
        try {
          train::validate_mlm_masking(m);
        } catch (const std::exception& e) {
          EXPECT_NE(std::string(e.what()).find("--mlm-probability"), std::string::npos) << e.what();
          throw;
        }
      },
      std::exception);
  m = bert_masking();
  m.mask_token_id = -1;
  EXPECT_THROW(train::validate_mlm_masking(m), std::exception);
}

// run_ner.py's tokenize_and_align_labels on word ids as the tokenizer reports them.
TEST(TokenLabels, FirstSubTokenCarriesTheLabel) {
  const std::vector<std::string> labels = {"B-LOC", "B-PER", "I-LOC", "I-PER", "O"};
  const auto b_to_i = train::b_to_i_labels(labels);
  EXPECT_EQ(b_to_i, (std::vector<int32_t>{2, 3, 2, 3, 4}));
  // [CLS] Johann(2 pieces) lives in Köln(3 pieces) [SEP]
  const std::vector<int32_t> word_ids = {-1, 0, 0, 1, 2, 3, 3, 3, -1};
  const std::vector<int32_t> word_labels = {1, 4, 4, 0};  // B-PER O O B-LOC
  EXPECT_EQ(train::align_word_labels(word_ids, word_labels, false, b_to_i),
            (std::vector<int32_t>{-100, 1, -100, 4, 4, 0, -100, -100, -100}));
  EXPECT_EQ(train::align_word_labels(word_ids, word_labels, true, b_to_i),
            (std::vector<int32_t>{-100, 1, 3, 4, 4, 0, 2, 2, -100}));
}

TEST(TokenLabels, BWithoutItsIKeepsItsOwnId) {
  const auto b_to_i = train::b_to_i_labels({"B-MISC", "O"});
  EXPECT_EQ(b_to_i, (std::vector<int32_t>{0, 1}));
  EXPECT_THROW(train::align_word_labels({-1, 0, 1, -1}, {1}, false, b_to_i), std::exception);
}

}  // namespace
}  // namespace tach
