// The sentencepiece-BPE pipelines of Llama 2 / Mistral / TinyLlama (Prepend + Replace
// normalizer), transformers' non-legacy Llama (Metaspace, prepend_scheme first) and Gemma
// (Replace normalizer, Split " " merged with the previous piece), all over Mistral 7B v0.1's
// published sentencepiece model with byte fallback to <0xNN> pieces: ids and decoded text equal
// Hugging Face tokenizers' on SST-2, AG News, CLINC150 and IMDB samples and the hard cases
// (scripts/golden/make_spm_tokenizers.py says how the files were made).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/tokenizer.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

std::string dir() { return test::fixtures_dir() + "/tokenizers/spm-mistral-v1"; }

class SpmPipeline : public ::testing::TestWithParam<const char*> {};

TEST_P(SpmPipeline, IdsAndDecodingMatchHuggingFaceTokenizers) {
  const std::string variant = GetParam();
  std::string path = dir() + "/tokenizer.json";
  test::TempDir tmp;
  if (variant != "llama2") {
    // The other pipelines differ from the first in their normalizer, pre-tokenizer and decoder only.
    json tok = json::parse(test::read_text(path));
    const json parts = json::parse(test::read_text(dir() + "/pipeline-" + variant + ".json"));
    for (const auto& [key, value] : parts.items()) tok[key] = value;
    path = tmp.file("tokenizer.json");
    test::write_text(path, tok.dump());
  }
  auto tokenizer = Tokenizer::load(path);
  std::ifstream in(dir() + "/expected-" + variant + ".jsonl");
  std::string line;
  int rows = 0, byte_fallback_rows = 0;
  while (std::getline(in, line)) {
    const json e = json::parse(line);
    const std::string text = e["text"].get<std::string>();
    const auto want = e["ids"].get<std::vector<int32_t>>();
    const Encoding got = tokenizer->encode(text);
    EXPECT_EQ(got.ids, want) << variant << ": " << text;
    EXPECT_EQ(tokenizer->decode(want), e["decoded"].get<std::string>()) << variant << ": " << text;
    for (int32_t id : want) byte_fallback_rows += (id >= 3 && id < 3 + 256) ? 1 : 0;  // the <0xNN> pieces
    ++rows;
  }
  EXPECT_GT(rows, 250);
  EXPECT_GT(byte_fallback_rows, 10) << "the texts must reach the byte-fallback pieces";
}

INSTANTIATE_TEST_SUITE_P(Variants, SpmPipeline, ::testing::Values("llama2", "metaspace", "gemma"));

}  // namespace
}  // namespace tach
