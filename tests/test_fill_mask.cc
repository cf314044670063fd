// Fill-mask: the pipeline's post-processing (softmax, top k, the token alone and in the text,
// several masks, the missing mask), the mask token and clean-up read from a tokenizer's files, and
// (golden) tiny masked LMs saved by transformers against its fill-mask pipeline, and the forward
// at the masks alone (Model::token_logits_at) against every token's logits for every masked-LM family.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tach/error.h"
#include "tach/fill_mask.h"
#include "tach/model.h"
#include "tach/tokenizer.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string bert_tokenizer_dir() { return test::shared_dir() + "/tokenizers/bert-base-uncased"; }

// Logits [M, V]: zero everywhere except the (position row, token, value) entries given.
Tensor logits_with(int64_t rows, int64_t vocab, const std::vector<std::tuple<int64_t, int32_t, float>>& peaks) {
  Tensor t = Tensor::zeros({rows, vocab}, DType::f32);
  for (const auto& [r, id, v] : peaks) t.data<float>()[r * vocab + id] = v;
  return t;
}

class FillMaskBert : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory(bert_tokenizer_dir())) GTEST_SKIP() << bert_tokenizer_dir() << " is absent";
    tok_ = Tokenizer::load(bert_tokenizer_dir());
    mask_ = read_mask_tokens(bert_tokenizer_dir(), *tok_);
  }
  int32_t id(const std::string& token) const { return *tok_->token_to_id(token); }
  std::unique_ptr<Tokenizer> tok_;
  MaskTokens mask_;
};

TEST_F(FillMaskBert, TheTokenizerFilesNameTheMaskPadAndCleanUp) {
  EXPECT_EQ(mask_.mask_token, "[MASK]");
  EXPECT_EQ(mask_.mask_id, 103);
  ASSERT_TRUE(mask_.pad_id.has_value());
  EXPECT_EQ(*mask_.pad_id, 0);
  EXPECT_TRUE(mask_.clean_up_spaces);  // tokenizer_config.json says so; WordPiece keeps it
}

TEST_F(FillMaskBert, OneMaskGivesTheSoftmaxLeadersWithTheFilledText) {
  const Encoding e = tok_->encode("Paris is the [MASK] of France.");
  const std::vector<int64_t> at = mask_positions(e.ids, mask_, "Paris is the [MASK] of France.");
  ASSERT_EQ(at, (std::vector<int64_t>{4}));
  const int64_t V = int64_t(tok_->vocab_size());
  const Tensor logits = logits_with(1, V, {{0, id("capital"), 5.f}, {0, id("city"), 4.f}, {0, id("center"), 3.f}});
  const auto got = fill_mask_candidates(*tok_, mask_, e.ids, at, logits, 3);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].size(), 3u);
  const double denominator = std::exp(5.) + std::exp(4.) + std::exp(3.) + double(V - 3);
  const char* words[] = {"capital", "city", "center"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[0][size_t(i)].token, id(words[i]));
    EXPECT_EQ(got[0][size_t(i)].token_str, words[i]);
    EXPECT_NEAR(got[0][size_t(i)].score, std::exp(5. - i) / denominator, 1e-7);
    EXPECT_EQ(got[0][size_t(i)].sequence, std::string("paris is the ") + words[i] + " of france.");
  }
}

// The pipeline predicts each mask alone and, with several, keeps the special tokens (the other
// masks among them) in the sequence: checked against transformers 5's output for this text.
TEST_F(FillMaskBert, SeveralMasksArePredictedOneAtATimeWithSpecialTokensKept) {
  const std::string text = "[MASK] is the [MASK] of France.";
  const Encoding e = tok_->encode(text);
  const auto at = mask_positions(e.ids, mask_, text);
  ASSERT_EQ(at, (std::vector<int64_t>{1, 4}));
  const Tensor logits = logits_with(2, int64_t(tok_->vocab_size()), {{0, id("paris"), 9.f}, {1, id("capital"), 9.f}});
  const auto got = fill_mask_candidates(*tok_, mask_, e.ids, at, logits, 1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0][0].sequence, "[CLS] paris is the [MASK] of france. [SEP]");
  EXPECT_EQ(got[1][0].sequence, "[CLS] [MASK] is the capital of france. [SEP]");
}

TEST_F(FillMaskBert, APredictedPadTokenIsDroppedFromTheSequenceAndSpecialTokensSpellThemselves) {
  const Encoding e = tok_->encode("a [MASK] b");
  const auto at = mask_positions(e.ids, mask_, "a [MASK] b");
  const auto got = fill_mask_candidates(*tok_, mask_, e.ids, at,
                                        logits_with(1, int64_t(tok_->vocab_size()), {{0, 0, 9.f}, {0, 103, 8.f}}), 2);
  EXPECT_EQ(got[0][0].token_str, "[PAD]");  // decode([id]) keeps special tokens
  EXPECT_EQ(got[0][0].sequence, "a b");
  EXPECT_EQ(got[0][1].token_str, "[MASK]");
  EXPECT_EQ(got[0][1].sequence, "a b");  // one mask: special tokens skipped, a predicted one too
}

TEST_F(FillMaskBert, TopKIsCappedAtTheVocabularyAndTiesGoToTheLowerId) {
  const Encoding e = tok_->encode("[MASK]");
  const auto got = fill_mask_candidates(*tok_, mask_, e.ids, mask_positions(e.ids, mask_, "[MASK]"),
                                        logits_with(1, 4, {{0, 2, 1.f}}), 10);
  ASSERT_EQ(got[0].size(), 4u);
  EXPECT_EQ(got[0][0].token, 2);
  EXPECT_EQ(got[0][1].token, 0);
  EXPECT_EQ(got[0][2].token, 1);
  EXPECT_EQ(got[0][3].token, 3);
  double sum = 0;
  for (const auto& c : got[0]) sum += c.score;
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST_F(FillMaskBert, ATextWithoutTheMaskTokenIsAUsageErrorNamingIt) {
  const Encoding e = tok_->encode("Paris is the capital of France.");
  try {
    mask_positions(e.ids, mask_, "Paris is the capital of France.");
    FAIL() << "no error";
  } catch (const UsageError& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("\"Paris is the capital of France.\""), std::string::npos) << m;
    EXPECT_NE(m.find("no mask token ([MASK])"), std::string::npos) << m;
  }
}

// transformers' clean_up_tokenization runs over the whole text, so it joins "don ' t", which the
// WordPiece decoder's own per-token clean-up leaves apart.
TEST_F(FillMaskBert, DecodingCleansUpAsTransformersWhenTheConfigSaysSo) {
  const Encoding e = tok_->encode("hello , world don't");
  EXPECT_EQ(decode_as_transformers(*tok_, mask_, e.ids, true), "hello, world don't");
  MaskTokens raw = mask_;
  raw.clean_up_spaces = false;
  EXPECT_EQ(decode_as_transformers(*tok_, raw, e.ids, true), "hello, world don ' t");
}

TEST(FillMaskTokens, FilesNameTheMaskElseTheTokenizersOwnElseAnError) {
  if (!fs::is_directory(bert_tokenizer_dir())) GTEST_SKIP() << bert_tokenizer_dir() << " is absent";
  test::TempDir dir;
  fs::copy_file(bert_tokenizer_dir() + "/tokenizer.json", dir.file("tokenizer.json"));
  const auto tok = Tokenizer::load(dir.path());
  // No tokenizer_config.json: the tokenizer's own [MASK], no pad, no clean-up (transformers' default).
  MaskTokens m = read_mask_tokens(dir.file("tokenizer.json"), *tok);
  EXPECT_EQ(m.mask_token, "[MASK]");
  EXPECT_FALSE(m.pad_id.has_value());
  EXPECT_FALSE(m.clean_up_spaces);
  // special_tokens_map.json's object form names another token.
  test::write_text(dir.file("special_tokens_map.json"), R"({"mask_token": {"content": "[unused0]"}})");
  EXPECT_EQ(read_mask_tokens(dir.path(), *tok).mask_id, 1);
  test::write_text(dir.file("tokenizer_config.json"), R"({"mask_token": "<nope>"})");
  const std::string err = test::error_of([&] { read_mask_tokens(dir.path(), *tok); });
  EXPECT_NE(err.find("files name <nope>, which is not in its vocabulary"), std::string::npos) << err;

  const std::string tiny = test::fixtures_dir() + "/tokenizers/tiny-wordpiece/tokenizer.json";
  const std::string none = test::error_of([&] { read_mask_tokens(tiny, *Tokenizer::load(tiny)); });
  EXPECT_NE(none.find("has no mask token ([MASK] or <mask>), so it cannot fill masks"), std::string::npos) << none;
}

json golden_expectations() { return json::parse(test::read_text(test::fixtures_dir() + "/fill_mask/expected.json")); }

std::vector<std::string> golden_case_names() {
  std::vector<std::string> out;
  const json expected = golden_expectations();
  for (const json& c : expected.at("cases")) out.push_back(c.at("model"));
  return out;
}

// The tiny masked LMs of tests/fixtures/heads (every family's masked-LM head) with tokenizers that
// fit their 120 ids, against transformers' fill-mask pipeline (scripts/golden/make_fill_mask_golden.py).
class FillMaskGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(FillMaskGolden, TinyMaskedLmGivesThePipelinesTokensAndScores) {
  const std::string name = GetParam();
  json c;
  const json expected = golden_expectations();
  for (const json& each : expected.at("cases"))
    if (each.at("model") == name) c = each;
  const std::string model_dir = test::fixtures_dir() + "/heads/" + name;
  SCOPED_TRACE("a regenerated tests/fixtures/heads/" + name + " needs scripts/golden/make_fill_mask_golden.py rerun");
  ASSERT_TRUE(fs::is_directory(model_dir)) << model_dir << " is missing";
  const std::string tok_path = test::fixtures_dir() + "/fill_mask/" + c.at("tokenizer").get<std::string>();
  const auto tok = Tokenizer::load(tok_path);
  const MaskTokens mask = read_mask_tokens(tok_path, *tok);
  const auto model = load_model(model_dir);
  for (const json& t : c.at("texts")) {
    const std::string text = t.at("text");
    SCOPED_TRACE(text);
    const auto got = fill_mask(*model, *tok, mask, {text}, t.at("top_k").get<int64_t>());
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].ids, t.at("input_ids").get<std::vector<int32_t>>());
    ASSERT_EQ(got[0].masks.size(), t.at("masks").size());
    for (size_t m = 0; m < got[0].masks.size(); ++m) {
      const json& want = t.at("masks")[m];
      ASSERT_EQ(got[0].masks[m].size(), want.size());
      for (size_t k = 0; k < want.size(); ++k) {
        const FillMaskCandidate& g = got[0].masks[m][k];
        EXPECT_EQ(g.token, want[k].at("token").get<int32_t>()) << "mask " << m << " rank " << k;
        EXPECT_NEAR(g.score, want[k].at("score").get<double>(), 1e-4) << "mask " << m << " rank " << k;
        EXPECT_EQ(g.token_str, want[k].at("token_str").get<std::string>());
        EXPECT_EQ(g.sequence, want[k].at("sequence").get<std::string>());
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Heads, FillMaskGolden, ::testing::ValuesIn(golden_case_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Every tiny masked LM of tests/fixtures/heads.
std::vector<std::string> masked_lm_fixtures() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(test::fixtures_dir() + "/heads"))
    if (e.path().filename().string().find("-mlm") != std::string::npos) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A padded batch of three texts of 13, 9 and 5 ids (special ids and the pad avoided) and the rows
// read: several in any order, the first and the last position, a sequence reading none, one in
// its padding.
struct RowsCase {
  TokenBatch batch;
  std::vector<std::vector<int64_t>> rows;
};
RowsCase rows_case(const ModelInfo& info) {
  std::vector<std::vector<int32_t>> ids;
  uint32_t x = 12345;
  for (const int n : {13, 9, 5}) {
    std::vector<int32_t> row;
    while (int(row.size()) < n) {
      x = x * 1664525u + 1013904223u;
      const int32_t id = int32_t(5 + (x >> 8) % uint32_t(info.vocab_size - 5));
      if (id != info.pad_token_id) row.push_back(id);
    }
    ids.push_back(row);
  }
  RowsCase c;
  std::vector<std::vector<int32_t>> types;  // BERT: the second text all of type 1
  if (info.type_vocab_size > 0)
    types = {std::vector<int32_t>(13, 0), std::vector<int32_t>(9, info.type_vocab_size > 1 ? 1 : 0),
             std::vector<int32_t>(5, 0)};
  c.batch = TokenBatch::from_rows(ids, info.pad_token_id, types);
  c.rows = {{0, 12, 5, 6}, {8, 3}, {}};
  return c;
}

class SelectedRows : public ::testing::TestWithParam<std::string> {};

// fill-mask's forward: the last layer and the head at the masks alone equal those rows of every
// token's logits (ModernBERT: its head and decoder at those rows), within f32 rounding.
TEST_P(SelectedRows, LogitsAtTheRowsEqualTheFullLogitsRows) {
  const auto model = load_model(test::fixtures_dir() + "/heads/" + GetParam());
  ASSERT_EQ(model->info().head, Head::masked_lm);
  RowsCase c = rows_case(model->info());
  for (int variant = 0; variant < 2; ++variant) {
    if (variant == 1) c.rows = {{2}, {0, 8}, {4, 7}};  // the shortest sequence's 7 is padding
    SCOPED_TRACE("variant " + std::to_string(variant));
    const Tensor full = model->token_logits(c.batch);  // [B, T, V]
    const Tensor at = model->token_logits_at(c.batch, c.rows);
    const int64_t T = full.size(1), V = full.size(2);
    ASSERT_EQ(at.dim(), 2);
    ASSERT_EQ(at.size(1), V);
    double scale = 0;
    for (int64_t i = 0; i < full.numel(); ++i) scale = std::max(scale, double(std::fabs(full.data<float>()[i])));
    int64_t r = 0;
    for (size_t b = 0; b < c.rows.size(); ++b)
      for (const int64_t p : c.rows[b]) {
        const float* want = full.data<float>() + (int64_t(b) * T + p) * V;
        const float* got = at.data<float>() + r++ * V;
        double worst = 0;
        for (int64_t v = 0; v < V; ++v) worst = std::max(worst, double(std::fabs(got[v] - want[v])));
        EXPECT_LE(worst / scale, 1e-5) << "sequence " << b << " row " << p;
      }
    EXPECT_EQ(at.size(0), r);
  }
}

// The encoders' one-row-per-sequence path (cls or last-token pooling) is the same general one.
TEST_P(SelectedRows, HiddenRowsAnywhereEqualTheHiddenStatesRows) {
  const auto model = load_model(test::fixtures_dir() + "/heads/" + GetParam());
  const RowsCase c = rows_case(model->info());
  const std::vector<int64_t> rows = {12, 0, 4};
  const Tensor all = model->hidden_states(c.batch);  // [B, T, C]
  const Tensor got = model->hidden_rows(c.batch, rows);
  const int64_t T = all.size(1), C = all.size(2);
  for (size_t b = 0; b < rows.size(); ++b)
    for (int64_t i = 0; i < C; ++i)
      EXPECT_NEAR(got.data<float>()[int64_t(b) * C + i], all.data<float>()[(int64_t(b) * T + rows[b]) * C + i], 1e-4)
          << "sequence " << b;
}

TEST_P(SelectedRows, ARowOutsideItsSequenceIsAnErrorNamingIt) {
  const auto model = load_model(test::fixtures_dir() + "/heads/" + GetParam());
  const RowsCase c = rows_case(model->info());
  std::string err = test::error_of([&] { model->token_logits_at(c.batch, {{0}, {13}, {}}); });
  EXPECT_NE(err.find("row 13 of sequence 1 is outside its 13 tokens"), std::string::npos) << err;
  err = test::error_of([&] { model->token_logits_at(c.batch, {{0}}); });
  EXPECT_NE(err.find("rows for 1 sequences in a batch of 3"), std::string::npos) << err;
  err = test::error_of([&] { model->token_logits_at(c.batch, {{}, {}, {}}); });
  EXPECT_NE(err.find("no rows asked for"), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(MaskedLms, SelectedRows, ::testing::ValuesIn(masked_lm_fixtures()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Texts batched into one padded forward give what one text per forward gives.
TEST(FillMaskModel, BatchedTextsGiveTheUnbatchedPredictions) {
  const json expected = golden_expectations();
  for (const json& c : expected.at("cases")) {
    const std::string name = c.at("model");
    SCOPED_TRACE(name);
    const std::string tok_path = test::fixtures_dir() + "/fill_mask/" + c.at("tokenizer").get<std::string>();
    const auto tok = Tokenizer::load(tok_path);
    const MaskTokens mask = read_mask_tokens(tok_path, *tok);
    const auto model = load_model(test::fixtures_dir() + "/heads/" + name);
    std::vector<std::string> texts;
    for (const json& t : c.at("texts")) texts.push_back(t.at("text"));
    ASSERT_GE(texts.size(), 2u);
    const auto one = fill_mask(*model, *tok, mask, texts, 3, 1);
    const auto batched = fill_mask(*model, *tok, mask, texts, 3, 3);
    ASSERT_EQ(one.size(), batched.size());
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(one[i].ids, batched[i].ids);
      ASSERT_EQ(one[i].masks.size(), batched[i].masks.size());
      for (size_t m = 0; m < one[i].masks.size(); ++m)
        for (size_t k = 0; k < one[i].masks[m].size(); ++k) {
          EXPECT_EQ(one[i].masks[m][k].token, batched[i].masks[m][k].token) << "text " << i << " mask " << m;
          EXPECT_NEAR(one[i].masks[m][k].score, batched[i].masks[m][k].score, 1e-5);
          EXPECT_EQ(one[i].masks[m][k].sequence, batched[i].masks[m][k].sequence);
        }
    }
  }
  const auto model = load_model(test::fixtures_dir() + "/heads/bert-mlm-f32");
  const std::string tok_path = test::fixtures_dir() + "/fill_mask/wordpiece-120";
  const auto tok = Tokenizer::load(tok_path);
  const std::string err =
      test::error_of([&] { fill_mask(*model, *tok, read_mask_tokens(tok_path, *tok), {"a [MASK]"}, 5, 0); });
  EXPECT_NE(err.find("batch size 0: must be at least 1"), std::string::npos) << err;
}

TEST(FillMaskModel, ATextPastThePositionsIsRefusedNotTruncated) {
  const std::string tok_path = test::fixtures_dir() + "/fill_mask/wordpiece-120";
  const auto tok = Tokenizer::load(tok_path);
  const auto model = load_model(test::fixtures_dir() + "/heads/bert-mlm-f32");  // 32 positions
  std::string text = "[MASK]";
  for (int i = 0; i < 40; ++i) text += " the";
  const std::string err = test::error_of([&] { fill_mask(*model, *tok, read_mask_tokens(tok_path, *tok), {text}); });
  EXPECT_NE(err.find("is 43 tokens, more than the 32 positions of"), std::string::npos) << err;
}

TEST(FillMaskModel, AModelWithAnotherHeadIsRefusedNamingIt) {
  const std::string tok_path = test::fixtures_dir() + "/fill_mask/wordpiece-120";
  const auto tok = Tokenizer::load(tok_path);
  const auto model = load_model(test::fixtures_dir() + "/encoders/bert-cls2-f32");
  const std::string err =
      test::error_of([&] { fill_mask(*model, *tok, read_mask_tokens(tok_path, *tok), {"a [MASK]"}); });
  EXPECT_NE(err.find("runs a sequence-classification head: fill-mask needs a masked LM's head"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace tach
