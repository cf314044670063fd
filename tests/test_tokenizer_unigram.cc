// Unigram tokenizers behind sentencepiece's Precompiled normalizer, as XLM-RoBERTa's: a model
// trained with sentencepiece and turned into tokenizer.json the ways the published files are
// (XLM-R's layout on the Hub, transformers' SpmConverter normalizer, transformers 5's
// XLMRobertaTokenizer) and a byte-fallback model with case-folding rules. Ids, offsets, pairs
// and decoded text equal Hugging Face tokenizers' on SST-2, AG News, CLINC150 and IMDB samples,
// the hard cases and texts that reach the normalizer's rules
// (scripts/golden/make_unigram_tokenizers.py says how the files were made).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/error.h"
#include "tach/tokenizer.h"
#include "test_util.h"
#include "tokenizer/precompiled.h"

namespace tach {
namespace {

using json = nlohmann::json;

std::string dir() { return test::fixtures_dir() + "/tokenizers/unigram-xlmr"; }

// The tokenizer.json of a variant: whole, or the published one with the variant's pipeline in
// place of its own (the charsmap, "@published" there, is the published file's).
std::string variant_file(const std::string& variant, test::TempDir& tmp) {
  std::string whole = dir() + "/tokenizer-" + variant + ".json";
  if (std::ifstream(whole).good()) return whole;
  json tok = json::parse(test::read_text(dir() + "/tokenizer-published.json"));
  const std::string charsmap = tok["normalizer"]["precompiled_charsmap"].get<std::string>();
  std::string parts_text = test::read_text(dir() + "/pipeline-" + variant + ".json");
  const size_t at = parts_text.find("@published");
  EXPECT_NE(at, std::string::npos);
  parts_text.replace(at, std::string("@published").size(), charsmap);
  const json parts = json::parse(parts_text);
  for (const auto& [key, value] : parts.items()) tok[key] = value;
  std::string path = tmp.file("tokenizer.json");
  test::write_text(path, tok.dump());
  return path;
}

class UnigramPipeline : public ::testing::TestWithParam<const char*> {};

TEST_P(UnigramPipeline, IdsOffsetsPairsAndDecodingMatchHuggingFaceTokenizers) {
  const std::string variant = GetParam();
  test::TempDir tmp;
  auto tokenizer = Tokenizer::load(variant_file(variant, tmp));
  std::ifstream in(dir() + "/expected-" + variant + ".jsonl");
  std::string line;
  int rows = 0, pairs = 0, unknown = 0, changed_by_normalizer = 0;
  while (std::getline(in, line)) {
    const json e = json::parse(line);
    const std::string text = e["text"].get<std::string>();
    const auto want = e["ids"].get<std::vector<int32_t>>();
    const Encoding got = tokenizer->encode(text);
    EXPECT_EQ(got.ids, want) << variant << ": " << text;
    const auto offsets = e["offsets"].get<std::vector<std::pair<uint32_t, uint32_t>>>();
    EXPECT_EQ(got.offsets, offsets) << variant << ": " << text;
    EXPECT_EQ(tokenizer->decode(want), e["decoded"].get<std::string>()) << variant << ": " << text;
    if (e.contains("pair_ids")) {
      // The next row's text as the second sequence.
      std::streampos here = in.tellg();
      std::string next;
      if (std::getline(in, next)) {
        const std::string b = json::parse(next)["text"].get<std::string>();
        EXPECT_EQ(tokenizer->encode_pair(text, b).ids, e["pair_ids"].get<std::vector<int32_t>>())
            << variant << ": " << text;
        ++pairs;
      }
      in.seekg(here);
    }
    for (int32_t id : want) unknown += id == (variant == std::string("byte_fallback") ? 0 : 3);
    changed_by_normalizer += e["decoded"].get<std::string>() != text;
    ++rows;
  }
  EXPECT_GT(rows, 200);
  EXPECT_GT(pairs, 50);
  EXPECT_GT(changed_by_normalizer, 20) << "the texts must reach the normalizer's rules";
  if (variant != std::string("byte_fallback")) { EXPECT_GT(unknown, 3) << "the texts must reach the unknown token"; }
}

INSTANTIATE_TEST_SUITE_P(Variants, UnigramPipeline,
                         ::testing::Values("published", "spm", "transformers5", "byte_fallback"));

TEST(UnigramPipeline, ByteFallbackReachesBytePieces) {
  auto tokenizer = Tokenizer::load(dir() + "/tokenizer-byte_fallback.json");
  // A character the 2000 pieces lack: its UTF-8 bytes as <0xNN> pieces, each spanning it.
  const Encoding e = tokenizer->encode("𝄞", false);
  ASSERT_GE(e.ids.size(), 4u);
  int bytes = 0;
  for (const auto& t : e.tokens) bytes += t.rfind("<0x", 0) == 0;
  EXPECT_EQ(bytes, 4);
}

// Hand-made blobs: what a malformed charsmap or model gives.
TEST(Precompiled, MalformedCharsmapsAreErrorsNotCrashes) {
  using tokenizer::CharsMap;
  EXPECT_THROW(CharsMap(std::string("\x01\x00", 2)), Error);                      // no full header
  EXPECT_THROW(CharsMap(std::string("\x10\x00\x00\x00\x00\x00", 6)), Error);      // trie past the end
  EXPECT_THROW(CharsMap(std::string("\x03\x00\x00\x00\x00\x00\x00", 7)), Error);  // not whole units
  // One unit whose offset points outside the trie: a lookup is an error, not a read past it.
  const std::string far("\x04\x00\x00\x00\x00\xfc\xff\x7f", 8);
  EXPECT_THROW(CharsMap(far).transform("a"), Error);
  EXPECT_FALSE(tokenizer::base64_decode("not base64 !").has_value());
  EXPECT_EQ(tokenizer::base64_decode("aGVsbG8=").value(), "hello");
  EXPECT_EQ(CharsMap("").transform("a"), std::nullopt);
}

TEST(Unigram, MalformedModelsNameTheField) {
  test::TempDir tmp;
  json tok = json::parse(test::read_text(dir() + "/tokenizer-published.json"));
  auto error_of = [&](const json& j) {
    test::write_text(tmp.file("tokenizer.json"), j.dump());
    try {
      Tokenizer::load(tmp.file("tokenizer.json"));
    } catch (const Error& e) { return std::string(e.what()); }
    return std::string();
  };
  json bad = tok;
  bad["model"]["vocab"][5] = {"piece"};
  EXPECT_NE(error_of(bad).find("model.vocab[5]: expected [\"piece\", score]"), std::string::npos) << error_of(bad);
  bad = tok;
  bad["model"]["unk_id"] = 1 << 30;
  EXPECT_NE(error_of(bad).find("model.unk_id: expected the index of a piece"), std::string::npos) << error_of(bad);
  bad = tok;
  bad["normalizer"]["precompiled_charsmap"] = "@@@";
  EXPECT_NE(error_of(bad).find("normalizer.precompiled_charsmap: not valid base64"), std::string::npos)
      << error_of(bad);
  // Without an unk_id, a character no piece covers is an error naming the model.
  bad = tok;
  bad["model"].erase("unk_id");
  test::write_text(tmp.file("tokenizer.json"), bad.dump());
  auto t = Tokenizer::load(tmp.file("tokenizer.json"));
  EXPECT_THROW(t->encode("\xe2\x98\x83 snowman"), Error);
}

}  // namespace
}  // namespace tach
