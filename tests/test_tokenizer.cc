// Tokenizer behaviour: loading errors, legacy files, split behaviours, pairs, offsets,
// decoding, invalid UTF-8. Expected ids for the shared tokenizers come from `tokenizers`.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/error.h"
#include "tach/tokenizer.h"
#include "test_util.h"
#include "tokenizer/normalized.h"
#include "tokenizer/pre_tokenizers.h"

namespace tach {
namespace {

using test::error_of;

// A small WordPiece tokenizer.json, edited per test.
nlohmann::json tiny_wordpiece() {
  return nlohmann::json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "[UNK]", "special": true, "normalized": false},
                     {"id": 1, "content": "[CLS]", "special": true, "normalized": false},
                     {"id": 2, "content": "[SEP]", "special": true, "normalized": false}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 10,
              "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "un": 3, "##aff": 4, "##able": 5, "hello": 6, ",": 7, "world": 8}}
  })");
}

std::unique_ptr<Tokenizer> load_json(const test::TempDir& dir, const nlohmann::json& j) {
  test::write_text(dir.file("tokenizer.json"), j.dump());
  return Tokenizer::load(dir.file("tokenizer.json"));
}

TEST(Tokenizer, WordPieceGreedyLongestMatchAndUnknown) {
  test::TempDir dir;
  auto tok = load_json(dir, tiny_wordpiece());
  Encoding e = tok->encode("Unaffable, HELLO world xyz unaffableeeee");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 3, 4, 5, 7, 6, 8, 0, 0, 2}));
  EXPECT_EQ(e.tokens[1], "un");
  EXPECT_EQ(e.tokens[2], "##aff");
  EXPECT_EQ(e.offsets[1], (std::pair<uint32_t, uint32_t>{0, 2}));
  EXPECT_EQ(e.offsets[3], (std::pair<uint32_t, uint32_t>{5, 9}));
  EXPECT_EQ(e.special_tokens_mask.front(), 1);
  EXPECT_EQ(tok->decode(e.ids), "unaffable, hello world");  // [UNK] is special: skipped
}

TEST(Tokenizer, PairsGetTypeIds) {
  test::TempDir dir;
  auto tok = load_json(dir, tiny_wordpiece());
  Encoding e = tok->encode_pair("hello", "world");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 6, 2, 8, 2}));
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(tok->encode_pair("hello", "world", false).ids, (std::vector<int32_t>{6, 8}));
}

TEST(TokenizerMalformed, ErrorsNameFileAndJsonPath) {
  test::TempDir dir;
  auto j = tiny_wordpiece();
  j["normalizer"] = {{"type", "Precompiled"}};
  EXPECT_NE(error_of([&] { load_json(dir, j); }).find("normalizer: missing \"precompiled_charsmap\""),
            std::string::npos);
  j = tiny_wordpiece();
  j["normalizer"] = {{"type", "Unknown"}};
  EXPECT_NE(error_of([&] { load_json(dir, j); }).find("normalizer.type: normalizer \"Unknown\" is not supported"),
            std::string::npos);
  j = tiny_wordpiece();
  j["model"] = {{"type", "Unigram"}, {"vocab", {{"a", 0.5}, 3}}};
  EXPECT_NE(error_of([&] { load_json(dir, j); }).find("model.vocab[1]: expected [\"piece\", score]"),
            std::string::npos);
  j = tiny_wordpiece();
  j["model"] = {{"type", "BPE"},
                {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}},
                {"merges", {"a b", "ab"}},
                {"dropout", nullptr}};
  const std::string err = error_of([&] { load_json(dir, j); });
  EXPECT_NE(err.find("tokenizer.json: model.merges[1]: expected \"a b\" or [\"a\", \"b\"]"), std::string::npos) << err;
  j["model"]["merges"] = {"a b"};
  j["model"]["dropout"] = 0.1;
  EXPECT_NE(error_of([&] { load_json(dir, j); }).find("model.dropout: BPE dropout must be null"), std::string::npos);
  j = tiny_wordpiece();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_NE(error_of([&] { load_json(dir, j); }).find("pre_tokenizer.pattern: pattern does not compile"),
            std::string::npos);
  j = tiny_wordpiece();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Sideways"}};
  EXPECT_NE(error_of([&] { load_json(dir, j); }).find("pre_tokenizer.behavior"), std::string::npos);
  j = tiny_wordpiece();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
                         {"special_tokens", nlohmann::json::object()}};
  EXPECT_NE(error_of([&] { load_json(dir, j); }).find("post_processor.single: the single-sequence template uses $B"),
            std::string::npos)
      << error_of([&] { load_json(dir, j); });
  test::write_text(dir.file("tokenizer.json"), "{\"model\": ");
  EXPECT_NE(error_of([&] { Tokenizer::load(dir.file("tokenizer.json")); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::load(dir.file("nope")); }).find("no such tokenizer"), std::string::npos);
}

TEST(Tokenizer, SplitBehaviours) {
  using tokenizer::Match;
  using tokenizer::SplitBehavior;
  // "a-b--c" split on '-': matches cover the string in order.
  const tokenizer::NormalizedString s("a-b--c", 0);
  const std::vector<Match> m = {{0, 1, false}, {1, 2, true}, {2, 3, false}, {3, 4, true}, {4, 5, true}, {5, 6, false}};
  auto run = [&](SplitBehavior b) {
    std::vector<tokenizer::NormalizedString> out;
    tokenizer::split_by(s, m, b, out);
    std::string joined;
    for (const auto& p : out) joined += "[" + p.text() + "]";
    return joined;
  };
  EXPECT_EQ(run(SplitBehavior::removed), "[a][b][c]");
  EXPECT_EQ(run(SplitBehavior::isolated), "[a][-][b][-][-][c]");
  EXPECT_EQ(run(SplitBehavior::merged_with_previous), "[a-][b-][-][c]");
  EXPECT_EQ(run(SplitBehavior::merged_with_next), "[a][-b][-][-c]");
  EXPECT_EQ(run(SplitBehavior::contiguous), "[a][-][b][--][c]");
}

TEST(Tokenizer, InvalidUtf8NeverCrashes) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the tokenizers live there";
  auto qwen = Tokenizer::load(test::shared_dir() + "/tokenizers/qwen2.5");
  auto bert = Tokenizer::load(test::shared_dir() + "/tokenizers/bert-base-uncased");
  const std::string bad = std::string("ok \xff\xfe end \xe2\x82") + "x\xc0\xaf";
  Encoding q = qwen->encode(bad, false);
  EXPECT_FALSE(q.ids.empty());
  for (const auto& [a, b] : q.offsets) EXPECT_LE(b, bad.size());
  // Each invalid byte reads as U+FFFD, so Qwen sees the replacement character's bytes.
  EXPECT_EQ(qwen->encode("\xff", false).ids, qwen->encode("\xef\xbf\xbd", false).ids);
  EXPECT_NO_THROW(bert->encode(bad));
}

TEST(Tokenizer, LegacyFilesMatchTokenizerJson) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the tokenizers live there";
  test::TempDir bert_dir, qwen_dir;
  for (const char* f : {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"})
    test::write_text(bert_dir.file(f), test::read_text(test::shared_dir() + "/tokenizers/bert-base-uncased/" + f));
  for (const char* f : {"vocab.json", "merges.txt", "tokenizer_config.json"})
    test::write_text(qwen_dir.file(f), test::read_text(test::shared_dir() + "/tokenizers/qwen2.5/" + f));
  auto bert_legacy = Tokenizer::load(bert_dir.path());
  auto bert_json = Tokenizer::load(test::shared_dir() + "/tokenizers/bert-base-uncased/tokenizer.json");
  auto qwen_legacy = Tokenizer::load(qwen_dir.path());
  auto qwen_json = Tokenizer::load(test::shared_dir() + "/tokenizers/qwen2.5/tokenizer.json");
  std::ifstream in(test::shared_dir() + "/data/sst2/dev.tsv");
  std::string line;
  std::getline(in, line);  // header
  int n = 0;
  while (std::getline(in, line) && n < 300) {
    const std::string text = line.substr(0, line.find('\t'));
    ASSERT_EQ(bert_legacy->encode(text).ids, bert_json->encode(text).ids) << text;
    ASSERT_EQ(qwen_legacy->encode(text, false).ids, qwen_json->encode(text, false).ids) << text;
    ++n;
  }
  EXPECT_EQ(n, 300);
}

TEST(Tokenizer, QwenDecodeRoundTripsAndSpecialTokensInText) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the tokenizers live there";
  auto qwen = Tokenizer::load(test::shared_dir() + "/tokenizers/qwen2.5");
  const std::string text = "Grüße, 世界! <|im_start|>user\n  tabs\tand 12345 emoji 👩‍👩‍👧";
  Encoding e = qwen->encode(text, false);
  EXPECT_EQ(qwen->decode(e.ids, false), text);
  EXPECT_NE(std::find(e.ids.begin(), e.ids.end(), 151644), e.ids.end());  // <|im_start|> matched as one token
  // Offsets cover the text: consecutive, from 0 to its end.
  EXPECT_EQ(e.offsets.front().first, 0u);
  EXPECT_EQ(e.offsets.back().second, text.size());
}

}  // namespace
}  // namespace tach
