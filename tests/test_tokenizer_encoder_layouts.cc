// The tokenizer layouts MPNet and ModernBERT publish, built the way their files are built
// (scripts/golden/make_encoder_tokenizers.py): MPNet's WordPiece behind a BertNormalizer with
// "<s> $A </s>" / "<s> $A </s> </s> $B </s>", and ModernBERT's byte-level BPE with
// "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B [SEP]". Ids, offsets, pairs and decoded text equal
// Hugging Face tokenizers' on SST-2, AG News, CLINC150 and IMDB samples and the hard cases.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/tokenizer.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

class EncoderTokenizerLayout : public ::testing::TestWithParam<const char*> {};

TEST_P(EncoderTokenizerLayout, IdsOffsetsPairsAndDecodingMatchHuggingFaceTokenizers) {
  const std::string dir = test::fixtures_dir() + "/tokenizers/" + GetParam();
  auto tokenizer = Tokenizer::load(dir + "/tokenizer.json");
  std::vector<json> rows;
  std::ifstream in(dir + "/expected.jsonl");
  for (std::string line; std::getline(in, line);) rows.push_back(json::parse(line));
  ASSERT_GT(rows.size(), 150u);
  int pairs = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& e = rows[i];
    const std::string text = e["text"].get<std::string>();
    const auto want = e["ids"].get<std::vector<int32_t>>();
    const Encoding got = tokenizer->encode(text);
    EXPECT_EQ(got.ids, want) << GetParam() << ": " << text;
    EXPECT_EQ(got.offsets, (e["offsets"].get<std::vector<std::pair<uint32_t, uint32_t>>>()))
        << GetParam() << ": " << text;
    EXPECT_EQ(tokenizer->decode(want), e["decoded"].get<std::string>()) << GetParam() << ": " << text;
    if (e.contains("pair_ids")) {  // the next row's text as the second sequence
      const std::string b = rows[(i + 1) % rows.size()]["text"].get<std::string>();
      EXPECT_EQ(tokenizer->encode_pair(text, b).ids, e["pair_ids"].get<std::vector<int32_t>>())
          << GetParam() << ": " << text;
      ++pairs;
    }
  }
  EXPECT_GT(pairs, 50);
}

INSTANTIATE_TEST_SUITE_P(Layouts, EncoderTokenizerLayout, ::testing::Values("mpnet", "modernbert-bpe"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s)
                             if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace tach
