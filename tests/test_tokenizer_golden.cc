// Token ids against Hugging Face `tokenizers`, on every file in ../shared/golden/tokenizers:
// SST-2 dev, CLINC150 test, AG News and IMDB with bert-base-uncased (special tokens added) and
// Qwen2.5 (none), and llama.cpp's tokenizer test vectors.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tach/error.h"
#include "tach/tokenizer.h"
#include "test_util.h"

namespace tach {
namespace {

std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty()) s += ' ';
    s += std::to_string(id);
  }
  return s;
}

// The shared tokenizers, loaded once per test binary.
const Tokenizer& shared_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& tok = cache[name];
  if (!tok) tok = Tokenizer::load(test::shared_dir() + "/tokenizers/" + name);
  return *tok;
}

struct GoldenCase {
  std::string file;       // under golden/tokenizers/hf
  std::string tokenizer;  // under tokenizers/
  bool add_special;
};

class HfGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(HfGolden, IdsMatchTokenizers) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the golden files live there";
  const auto& c = GetParam();
  const Tokenizer* tok = &shared_tokenizer(c.tokenizer);
  std::ifstream in(test::shared_dir() + "/golden/tokenizers/hf/" + c.file);
  ASSERT_TRUE(in) << c.file;
  std::string line;
  size_t n = 0, wrong = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const auto want = j["ids"].get<std::vector<int32_t>>();
    const auto got = tok->encode(j["text"].get<std::string>(), c.add_special).ids;
    ++n;
    if (got != want && ++wrong <= 3)
      ADD_FAILURE() << c.file << " line " << n << ": " << j["text"].dump() << "\n  want " << ids_str(want)
                    << "\n  got  " << ids_str(got);
  }
  EXPECT_GT(n, 0u);
  EXPECT_EQ(wrong, 0u) << wrong << " of " << n << " lines differ";
}

INSTANTIATE_TEST_SUITE_P(
    Shared, HfGolden,
    ::testing::Values(GoldenCase{"bert-base-uncased.sst2-dev.jsonl", "bert-base-uncased", true},
                      GoldenCase{"bert-base-uncased.clinc150-test.jsonl", "bert-base-uncased", true},
                      GoldenCase{"bert-base-uncased.agnews-test-500.jsonl", "bert-base-uncased", true},
                      GoldenCase{"bert-base-uncased.imdb-200.jsonl", "bert-base-uncased", true},
                      GoldenCase{"qwen2.5.sst2-dev.jsonl", "qwen2.5", false},
                      GoldenCase{"qwen2.5.clinc150-test.jsonl", "qwen2.5", false},
                      GoldenCase{"qwen2.5.agnews-test-500.jsonl", "qwen2.5", false},
                      GoldenCase{"qwen2.5.imdb-200.jsonl", "qwen2.5", false}),
    [](const auto& param_info) {
      std::string s = param_info.param.file.substr(0, param_info.param.file.size() - 6);
      for (auto& ch : s)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

// llama.cpp's vectors: inputs separated by "\n__ggml_vocab_test__\n", one line of ids per input.
void check_llama_cpp(const std::string& stem, const std::string& tokenizer) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the golden files live there";
  auto tok = Tokenizer::load(test::shared_dir() + "/tokenizers/" + tokenizer);
  const std::string base = test::shared_dir() + "/golden/tokenizers/llama.cpp/" + stem;
  const std::string inp = test::read_text(base + ".inp");
  std::vector<std::string> inputs;
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0;;) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    inputs.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(base + ".out");
  std::string line;
  size_t i = 0, wrong = 0;
  while (std::getline(out, line) && i < inputs.size()) {
    std::vector<int32_t> want;
    std::istringstream ss(line);
    for (int32_t id; ss >> id;) want.push_back(id);
    const auto got = tok->encode(inputs[i], false).ids;
    if (got != want && ++wrong <= 5)
      ADD_FAILURE() << stem << " input " << i << ": " << nlohmann::json(inputs[i]).dump() << "\n  want "
                    << ids_str(want) << "\n  got  " << ids_str(got);
    ++i;
  }
  EXPECT_EQ(i, inputs.size()) << "as many id lines as inputs";
  EXPECT_EQ(wrong, 0u) << wrong << " of " << i << " inputs differ";
}

TEST(LlamaCppVectors, Qwen2) { check_llama_cpp("ggml-vocab-qwen2.gguf", "qwen2.5"); }
TEST(LlamaCppVectors, BertBge) { check_llama_cpp("ggml-vocab-bert-bge.gguf", "bert-base-uncased"); }

}  // namespace
}  // namespace tach

namespace tach {
namespace {

// Hard cases (scripts/golden/make_tokenizer_cases.py): empty and whitespace-only text,
// control characters, zero-width joiners, combining accents against precomposed letters,
// CJK, emoji ZWJ sequences, full-width forms, words over 100 characters, special-token
// strings inside text, pairs. Ids, type ids and (UTF-8 byte) offsets as tokenizers gives them.
TEST(HardCases, IdsTypeIdsAndOffsetsMatchTokenizers) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the tokenizers live there";
  std::ifstream in(test::fixtures_dir() + "/tokenizers/hard_cases.jsonl");
  ASSERT_TRUE(in);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const Tokenizer* tok = &shared_tokenizer(j["tokenizer"].get<std::string>());
    const std::string text = j["text"].get<std::string>();
    const bool add = j["add_special"].get<bool>();
    const Encoding e =
        j.contains("pair") ? tok->encode_pair(text, j["pair"].get<std::string>(), add) : tok->encode(text, add);
    SCOPED_TRACE(j["tokenizer"].get<std::string>() + " " + j["text"].dump() + (add ? " +special" : ""));
    EXPECT_EQ(e.ids, j["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(e.type_ids, j["type_ids"].get<std::vector<int32_t>>());
    if (j.contains("offsets")) {
      const auto want = j["offsets"].get<std::vector<std::pair<uint32_t, uint32_t>>>();
      EXPECT_EQ(e.offsets, want);
    }
    ++n;
  }
  EXPECT_EQ(n, 92);
}

}  // namespace
}  // namespace tach

namespace tach {
namespace {

Truncation::Strategy strategy_of(const std::string& s) {
  if (s == "only_first") return Truncation::Strategy::only_first;
  if (s == "only_second") return Truncation::Strategy::only_second;
  return Truncation::Strategy::longest_first;
}

// Truncation (strategies, stride windows, both directions) and padding (longest in a batch,
// fixed, both directions, pad_to_multiple_of) against tokenizers. Where tokenizers refuses
// (a sequence too short to cut, a stride not below the cut length), tach must refuse too.
TEST(TruncationAndPadding, MatchTokenizers) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared/ is not present; the tokenizers live there";
  std::ifstream in(test::fixtures_dir() + "/tokenizers/truncation_cases.jsonl");
  ASSERT_TRUE(in);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const Tokenizer* tok = &shared_tokenizer(j["tokenizer"].get<std::string>());
    SCOPED_TRACE(line.substr(0, 200));
    ++n;
    EncodeOptions opt;
    const Side side = j["direction"] == "left" ? Side::left : Side::right;
    if (j.contains("padding")) {
      Padding p;
      p.direction = side;
      p.pad_to_multiple_of = j["multiple"].is_null() ? 0 : j["multiple"].get<size_t>();
      if (j["padding"] == "longest") {
        const auto out = tok->encode_batch(j["batch"].get<std::vector<std::string>>(), EncodeOptions{true, {}, p});
        std::vector<std::vector<int32_t>> ids, mask;
        for (const auto& e : out) ids.push_back(e.ids), mask.push_back(e.attention_mask);
        EXPECT_EQ(ids, j["ids"].get<std::vector<std::vector<int32_t>>>());
        EXPECT_EQ(mask, j["attention_mask"].get<std::vector<std::vector<int32_t>>>());
      } else {
        p.strategy = Padding::Strategy::fixed;
        p.length = j["length"].get<size_t>();
        const Encoding e = tok->encode(j["text"].get<std::string>(), EncodeOptions{true, {}, p});
        EXPECT_EQ(e.ids, j["ids"].get<std::vector<int32_t>>());
        EXPECT_EQ(e.attention_mask, j["attention_mask"].get<std::vector<int32_t>>());
        EXPECT_EQ(e.type_ids, j["type_ids"].get<std::vector<int32_t>>());
      }
      continue;
    }
    Truncation t;
    t.max_length = j["max_length"].get<size_t>();
    t.stride = j["stride"].get<size_t>();
    t.strategy = strategy_of(j["strategy"].get<std::string>());
    t.direction = side;
    opt.truncation = t;
    const std::string a = j["text"].get<std::string>();
    auto run = [&] {
      return j["pair"].is_null() ? tok->encode(a, opt) : tok->encode_pair(a, j["pair"].get<std::string>(), opt);
    };
    if (j.contains("error")) {
      EXPECT_THROW(run(), Error);
      continue;
    }
    const Encoding e = run();
    EXPECT_EQ(e.ids, j["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(e.type_ids, j["type_ids"].get<std::vector<int32_t>>());
    std::vector<std::vector<int32_t>> over, over_types;
    for (const auto& o : e.overflowing) over.push_back(o.ids), over_types.push_back(o.type_ids);
    EXPECT_EQ(over, j["overflowing"].get<std::vector<std::vector<int32_t>>>());
    EXPECT_EQ(over_types, j["overflowing_type_ids"].get<std::vector<std::vector<int32_t>>>());
  }
  EXPECT_EQ(n, 144);
}

}  // namespace
}  // namespace tach
