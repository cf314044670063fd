// Qwen2 against transformers on tiny models it wrote with save_pretrained
// (scripts/golden/make_qwen2_fixtures.py): classifier logits for right- and left-padded
// batches, vocabulary logits, greedy generation, f32/f16/bf16 weights, GQA with 1, 2 and 4
// key/value heads, tied and untied embeddings, linear RoPE scaling, and bf16 compute.
#include <gtest/gtest.h>

#include "cpu/gemm.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/decoder_config.h"
#include "tach/model.h"
#include "tach/tokenizer.h"
#include "golden_check.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;
using test::error_of;

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/decoders/" + name; }

using test::padded_batch;

using test::expected_json;
using test::scaled_error;

class GoldenQwen2Classifier : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenQwen2Classifier, RightAndLeftPaddedLogitsMatchTransformers) {
  const std::string dir = fixture(GetParam());
  const json e = expected_json(dir);
  auto model = load_model(dir);
  EXPECT_EQ(model->info().architecture, e["architecture"].get<std::string>());
  EXPECT_EQ(model->info().weights_dtype, e["weights_dtype"].get<std::string>());
  EXPECT_EQ(model->info().disk_bytes, int64_t(std::filesystem::file_size(dir + "/model.safetensors")));
  test::check_decoder_classifier_against_transformers(*model, dir);
  const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
  const int32_t pad = e["pad_id"].get<int32_t>();

  // bf16 compute: within 2e-2 of the f32 reference, relative to the logits' scale (where oneDNN
  // has no bf16 GEMM, bf16 weights with f32 arithmetic: closer still).
  LoadOptions bf16;
  bf16.compute = DType::bf16;
  auto m16 = load_model(dir, bf16);
  Tensor l16 = m16->classify(padded_batch(rows, pad, false));
  const auto want = e["logits_right"].get<std::vector<std::vector<float>>>();
  for (size_t r = 0; r < want.size(); ++r)
    EXPECT_LT(scaled_error(l16.data<float>() + r * want[r].size(), want[r]), 2e-2) << "bf16 row " << r;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenQwen2Classifier, ::testing::Values("qwen2-cls-kv1-f32", "qwen2-cls-kv2-bf16"));

class GoldenQwen2CausalLM : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenQwen2CausalLM, LogitsAndGreedyTokensMatchTransformers) {
  const std::string dir = fixture(GetParam());
  auto model = load_model(dir);
  EXPECT_EQ(model->info().architecture, "Qwen2ForCausalLM");
  EXPECT_TRUE(model->info().causal_lm);
  const Generation g = test::check_decoder_lm_against_transformers(*model, dir);
  EXPECT_GT(g.time_to_first_token_s, 0);
  EXPECT_EQ(int64_t(g.decode_step_s.size()), int64_t(g.tokens.front().size()) - 1);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenQwen2CausalLM,
                         ::testing::Values("qwen2-lm-kv4-untied-f32", "qwen2-lm-kv2-tied-f16",
                                           "qwen2-lm-rope-linear-f32", "qwen2-lm-rope-dynamic-f32"));

TEST(GoldenQwen2, RealTokenizerAndGeneration) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared is absent";
  const std::string dir = fixture("qwen2-tok-bf16");
  const json e = expected_json(dir);
  auto tok = Tokenizer::load(test::shared_dir() + "/tokenizers/qwen2.5");
  std::vector<std::vector<int32_t>> rows;
  for (const auto& t : e["texts"]) rows.push_back(tok->encode(t.get<std::string>()).ids);
  EXPECT_EQ(rows, (e["input_rows"].get<std::vector<std::vector<int32_t>>>()));
  auto model = load_model(dir);
  GenerateOptions go;
  go.max_new_tokens = e["new_tokens"].get<int64_t>();
  go.stop_at_eos = false;
  const Generation g = model->generate(padded_batch(rows, e["pad_id"].get<int32_t>(), true), go);
  EXPECT_EQ(g.tokens, (e["generated"].get<std::vector<std::vector<int32_t>>>()));
}

TEST(Qwen2, ClassifierNeedsItsHeadAndLeftPaddingForGeneration) {
  auto lm = load_model(fixture("qwen2-lm-kv4-untied-f32"));
  EXPECT_NE(error_of([&] {
              lm->classify(padded_batch({{1, 2}}, 0, false));
            }).find("has no sequence-classification head"),
            std::string::npos);
  GenerateOptions go;
  go.max_new_tokens = 2;
  EXPECT_NE(error_of([&] {
              lm->generate(padded_batch({{1, 2, 3}, {4}}, 0, false), go);
            }).find("must be left-padded"),
            std::string::npos);
  auto cls = load_model(fixture("qwen2-cls-kv1-f32"));
  EXPECT_NE(error_of([&] { cls->lm_logits(padded_batch({{1}}, 0, false)); }).find("no language-model head"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cls->classify(padded_batch({{1, 999}}, 0, false));
            }).find("outside the vocabulary of 256"),
            std::string::npos);
}

TEST(DecoderConfig, ClearErrorsAndSwitches) {
  const auto parse = [](const std::string& extra) {
    return model::parse_decoder_config_text(R"({"model_type": "qwen2", "hidden_size": 32, "num_attention_heads": 4,
                                                "vocab_size": 64, "num_hidden_layers": 2, "intermediate_size": 48)" +
                                                extra + "}",
                                            "config.json");
  };
  EXPECT_NE(error_of([&] {
              parse(R"(, "rope_scaling": {"type": "longrope", "factor": 4})");
            }).find("rope type \"longrope\"; tach implements default, linear, dynamic, llama3, yarn"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse(R"(, "num_key_value_heads": 3)"); }).find("cannot be shared among 3 key/value heads"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse(R"(, "layer_types": ["full_attention", "chunked_attention"])");
            }).find("layer type \"chunked_attention\" at layer 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse(R"(, "attn_logit_softcapping": 50.0)"); }).find("attention-logit softcapping"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse(R"(, "model_type": "falcon")");
            }).find("is not one tach builds (bert, distilbert, roberta, xlm-roberta, mpnet, qwen2, llama"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8})");
            }).find("needs \"original_max_position_embeddings\""),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse(R"(, "model_type": "llama", "attention_bias": "yes")");
            }).find("\"attention_bias\" must be true or false"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse(R"(, "attention_dropout": "0.1")"); }).find("\"attention_dropout\" must be a number"),
            std::string::npos);
  // Qwen2's sliding layers: from max_window_layers on, when use_sliding_window is set.
  const auto w = parse(R"(, "use_sliding_window": true, "sliding_window": 16, "max_window_layers": 1)");
  EXPECT_EQ(w.layer_window, (std::vector<int64_t>{0, 16}));
  const auto c = parse(R"(, "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
                          "eos_token_id": [1, 2], "tie_word_embeddings": true)");
  EXPECT_EQ(c.rope.type, "linear");
  EXPECT_EQ(c.rope.theta, 500.0);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.num_kv_heads, 4);  // defaults to the query heads (plain multi-head attention)
}

TEST(Qwen2Preset, HalfBillionConfigIsTheRealOne) {
  auto m = load_model("preset:qwen2-tiny");
  EXPECT_EQ(m->info().labels.size(), 23u);
  EXPECT_EQ(m->info().num_kv_heads, 1);
  EXPECT_TRUE(m->info().causal_lm);  // tied embeddings: it also generates
  Tensor logits = m->classify(padded_batch({{1, 2, 3}, {4, 5}}, 151643, false));
  EXPECT_EQ(logits.size(1), 23);
}

}  // namespace
}  // namespace tach
