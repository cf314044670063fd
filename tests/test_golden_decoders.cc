// Llama, Mistral, Qwen3 and Gemma 3 against transformers on tiny models it wrote with
// save_pretrained (scripts/golden/make_decoder_fixtures.py): classifier logits for right- and
// left-padded batches, vocabulary logits and greedy generation, with each family's switches on:
// attention and MLP biases, llama3 and yarn RoPE, sliding windows shorter than the rows (4 keys,
// rows of up to 10 tokens plus 8 generated), q/k norms, head_dim != hidden/heads, Gemma's (1 + w)
// norms on both sides of each branch, embedding scale, query_pre_attn_scalar, per-layer-type RoPE
// and final logit softcapping; f32 and bf16 weights. Norm weights are random in every fixture.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "cpu/int8_quant.h"
#include "golden_check.h"
#include "model/decoder_config.h"
#include "tach/embed.h"
#include "tach/model.h"
#include "tach/tokenizer.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/decoders/" + name; }

class GoldenDecoderClassifier : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenDecoderClassifier, RightAndLeftPaddedLogitsMatchTransformers) {
  const std::string dir = fixture(GetParam());
  const json e = test::expected_json(dir);
  auto model = load_model(dir);
  EXPECT_EQ(model->info().architecture, e["architecture"].get<std::string>());
  EXPECT_EQ(model->info().weights_dtype, e["weights_dtype"].get<std::string>());
  EXPECT_TRUE(model->info().classifier);
  test::check_decoder_classifier_against_transformers(*model, dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenDecoderClassifier,
                         ::testing::Values("llama-cls-bias-f32", "mistral-cls-window4-f32", "qwen3-cls-headdim16-f32",
                                           "gemma3-cls-f32", "modernbert-cls-mean-f32", "modernbert-cls-bias-bf16"));

// ModernBERT's bare model: the final-normed hidden states at every real token, right- and
// left-padded (bidirectional: a pad key on either side must not leak in; positions run 0..T-1
// over the padding, as transformers runs them).
TEST(GoldenModernBert, HiddenStatesMatchTransformers) {
  const std::string dir = fixture("modernbert-base-model-f32");
  const json e = test::expected_json(dir);
  auto model = load_model(dir);
  EXPECT_EQ(model->info().architecture, "ModernBertModel");
  EXPECT_NE(model->info().positions.find("local attention (2 keys on either side) on 2 of 4 layers"), std::string::npos)
      << model->info().positions;
  test::check_hidden_states_against_transformers(*model, dir);
  const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
  EXPECT_NE(test::error_of([&] {
              model->generate(test::padded_batch(rows, 0, true), GenerateOptions{});
            }).find("bidirectional encoder"),
            std::string::npos);
}

class GoldenDecoderCausalLM : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenDecoderCausalLM, LogitsAndGreedyTokensMatchTransformers) {
  const std::string dir = fixture(GetParam());
  const json e = test::expected_json(dir);
  auto model = load_model(dir);
  EXPECT_EQ(model->info().architecture, e["architecture"].get<std::string>());
  EXPECT_TRUE(model->info().causal_lm);
  const Generation g = test::check_decoder_lm_against_transformers(*model, dir);
  EXPECT_EQ(g.decode_step_s.size(), size_t(e["new_tokens"].get<int64_t>() - 1));
  // The prefill bench and profile time: transformers' logits at each row's last real token.
  const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
  const auto want = e["lm_logits_right"].get<std::vector<std::vector<std::vector<float>>>>();
  const Tensor prefill = model->prefill_logits(test::padded_batch(rows, e["pad_id"].get<int32_t>(), false));
  ASSERT_EQ(prefill.size(0), int64_t(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r)
    EXPECT_LT(test::scaled_error(prefill.data<float>() + r * prefill.size(1), want[r].back()), 1e-4) << "row " << r;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenDecoderCausalLM,
                         ::testing::Values("llama-lm-llama3rope-f32", "llama-lm-yarn-bf16", "mistral-lm-window4-f32",
                                           "qwen3-lm-window-bf16", "gemma3-lm-softcap-f32", "gemma3-lm-bf16"));

// The least a decode step reads, as tach generate's bandwidth limit counts it, exactly, on every
// ISA path (ctest runs it again under DNNL_MAX_CPU_ISA and TACH_F32_GEMM, tests/cmake/isa_paths.cmake):
// every parameter but the input embedding's once (one embedding row per sequence), f32 4 B; int8
// each linear's codes, 1 B, and a 4 B scale per output; the key/value cache at each step's length.
// Not the padding of oneDNN's blocked layouts, which its kernels never load: on a VNNI CPU int8
// pads this fixture's 32-wide weights to 64 x 64 blocks, and counting them gave int8 82,560 B, 80%
// of f32's, and a limit above what the step needs.
TEST(DecoderFamilies, DecodeStepBytes) {
  const std::string dir = fixture("qwen2-lm-kv4-untied-f32");
  GenerateOptions go;
  go.max_new_tokens = 5;
  go.stop_at_eos = false;
  const TokenBatch prompts = TokenBatch::left_padded({{9, 88, 3}, {5, 17, 33}}, 0);
  auto f32 = load_model(dir);
  const ModelInfo& i = f32->info();
  const Generation g = f32->generate(prompts, go);
  const double body_and_head = 4.0 * double(i.parameters - i.vocab_size * i.hidden_size);
  const double embedding_rows = 2.0 * double(i.hidden_size) * 4;
  // The panel kernels (TACH_F32_GEMM=panels, or decoding on AVX2) read their 16-column panels
  // whole; every output width here is a multiple of 16, so no panel is padded.
  EXPECT_DOUBLE_EQ(g.decode_weight_bytes, body_and_head + embedding_rows);
  // Steps 1..4 see caches of 4..7 positions for both rows: K and V, every layer, f32.
  const double per_position = 2.0 * double(i.num_layers * 2 * i.num_kv_heads * i.head_dim) * 4;
  EXPECT_DOUBLE_EQ(g.decode_cache_bytes, per_position * (4 + 5 + 6 + 7) / 4.0);
  LoadOptions int8;
  int8.compute = DType::i8;
  const Generation q = load_model(dir, int8)->generate(prompts, go);
  // The linears: q|k|v, o, gate|up and down per layer, and the untied LM head.
  const int64_t C = i.hidden_size, I = i.intermediate_size, qkv = (i.num_heads + 2 * i.num_kv_heads) * i.head_dim;
  const double linear_weights =
      double(i.num_layers * (qkv * C + C * i.num_heads * i.head_dim + 2 * I * C + C * I) + i.vocab_size * C);
  const double linear_outputs = double(i.num_layers * (qkv + C + 2 * I + C) + i.vocab_size);
  EXPECT_DOUBLE_EQ(q.decode_weight_bytes, body_and_head + embedding_rows - 3 * linear_weights + 4 * linear_outputs)
      << "int8: 1 B per linear weight and a 4 B scale per output (" << cpu::int8_scheme() << ")";
  EXPECT_DOUBLE_EQ(q.decode_cache_bytes, g.decode_cache_bytes) << "the cache stays f32";
}

TEST(DecoderFamilies, InfoNamesTheSwitches) {
  auto gemma = load_model(fixture("gemma3-lm-softcap-f32"));
  EXPECT_EQ(gemma->info().model_type, "gemma3_text");
  EXPECT_NE(gemma->info().positions.find("sliding window 4 on 2 of 3 layers"), std::string::npos)
      << gemma->info().positions;
  EXPECT_NE(gemma->info().positions.find("(local rotary theta 100)"), std::string::npos) << gemma->info().positions;
  auto llama = load_model(fixture("llama-lm-llama3rope-f32"));
  EXPECT_NE(llama->info().positions.find("llama3 scaling x4"), std::string::npos) << llama->info().positions;
  EXPECT_EQ(llama->info().head_dim, 16);  // not hidden / heads (32 / 4)
}

// ModernBERT's config.json as transformers 5 writes it (layer_types, rope_parameters per layer
// type) and as the Hub's checkpoints spell it (global/local_rope_theta, global_attn_every_n_layers,
// local_attention) read alike; what tach does not build is refused by name.
TEST(DecoderFamilies, ModernBertConfigInEitherSpelling) {
  const model::DecoderConfig fresh = model::load_decoder_config(fixture("modernbert-cls-mean-f32") + "/config.json");
  const std::string old_fields =
      R"("model_type": "modernbert", "architectures": ["ModernBertForSequenceClassification"],
      "vocab_size": 256, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 4,
      "global_rope_theta": 160.0, "local_rope_theta": 10.0, "local_attention": 4, "global_attn_every_n_layers": 3,
      "classifier_pooling": "mean", "num_labels": 3)";
  const model::DecoderConfig old = model::parse_decoder_config_text("{" + old_fields + "}", "old");
  EXPECT_EQ(old.layer_window, fresh.layer_window);
  EXPECT_EQ(fresh.layer_window, (std::vector<int64_t>{0, 2, 2, 0}));
  EXPECT_EQ(old.rope.theta, 160.0);
  EXPECT_EQ(fresh.rope.theta, 160.0);
  EXPECT_EQ(old.local_rope.theta, 10.0);
  EXPECT_EQ(fresh.local_rope.theta, 10.0);
  EXPECT_FALSE(old.causal);
  EXPECT_TRUE(old.pooling == model::DecoderConfig::Pooling::mean);
  auto refused = [&](const std::string& extra) {
    return test::error_of([&] { model::parse_decoder_config_text("{" + old_fields + ", " + extra + "}", "bad"); });
  };
  EXPECT_NE(refused(R"("norm_bias": true)").find("norm_bias"), std::string::npos);
  EXPECT_NE(refused(R"("hidden_activation": "silu")").find("hidden_activation"), std::string::npos);
  EXPECT_NE(refused(R"("classifier_pooling": "max")").find("classifier_pooling"), std::string::npos);
}

// A classifier's and a causal LM's prefill read one row per sequence, so their last layer runs
// o, the norms and the MLP for those rows only (q|k|v still for every row: the head's row attends
// to all the keys). The right- and left-padded golden tests above check the logits; this checks
// that the declared costs count what runs, for an embedding model with last-token pooling too.
TEST(DecoderFamilies, HeadsRunTheLastLayerForTheirRowsOnly) {
  constexpr int64_t B = 2, T = 16;
  for (const char* name : {"llama-cls-bias-f32", "mistral-lm-window4-f32"}) {
    auto model = load_model(fixture(name));
    const ModelInfo& i = model->info();
    const double C = double(i.hidden_size), I = double(i.intermediate_size);
    const double HD = double(i.num_heads * i.head_dim);
    const ForwardCost head = model->forward_cost(B, T), every_row = model->hidden_states_cost(B, T);
    // The head itself (a few labels, or the vocabulary for B rows) against the last layer's o,
    // gate|up and down no longer run for B*T - B rows.
    const double head_flops = 2.0 * B * C * double(i.classifier ? int64_t(i.labels.size()) : i.vocab_size);
    const double not_run = 2.0 * double(B * T - B) * (C * HD + 3 * C * I);
    EXPECT_GE(every_row.flops + head_flops - head.flops, not_run) << name;
    EXPECT_LT(every_row.flops + head_flops - head.flops, every_row.flops / double(i.num_layers)) << name;
  }
  // ModernBERT: its classifier's first token takes the pass when the last layer is global (as in
  // this fixture: layers 0 and 3 of 4), and mean pooling reads every row.
  for (const char* name : {"modernbert-cls-bias-bf16", "modernbert-cls-mean-f32"}) {
    auto model = load_model(fixture(name));
    const bool mean = std::string(name).find("mean") != std::string::npos;
    const double head = model->forward_cost(B, T).flops, every_row = model->hidden_states_cost(B, T).flops;
    if (mean) EXPECT_GT(head, every_row) << name;
    else EXPECT_LT(head, every_row) << name;
  }
  // The embedding model (last-token pooling): its vector is one token per row, so its last layer
  // runs for those rows too; no LM head (its tied embeddings would give it one).
  auto embedder = load_model(fixture("qwen3-embed-bf16"));
  const ModelInfo& e = embedder->info();
  ASSERT_TRUE(e.embedding);
  const ForwardCost pooled = embedder->forward_cost(B, T), body = embedder->hidden_states_cost(B, T);
  EXPECT_LT(pooled.flops, body.flops);
  EXPECT_GT(pooled.flops, body.flops * (1 - 1.0 / double(e.num_layers)));
}

// Last-token pooling reads each row's last real token through the head-rows pass: a row's vector
// is the one it has alone (right- or left-padded beside a longer row), and a row of padding only
// gives zeros, as sentence-transformers' masked gather does.
TEST(DecoderEmbedding, LastTokenRowsAsAloneAndPaddingOnlyRowsZero) {
  auto model = load_model(fixture("qwen3-embed-bf16"));
  const std::vector<int32_t> short_row = {11, 42, 7}, long_row = {5, 9, 31, 2, 77, 13};
  const Tensor alone = model->embed(test::padded_batch({short_row}, 0, false));
  const int64_t E = alone.size(1);
  for (const bool left : {false, true}) {
    const Tensor both = model->embed(test::padded_batch({long_row, short_row}, 0, left));
    for (int64_t k = 0; k < E; ++k)
      ASSERT_NEAR(both.data<float>()[E + k], alone.data<float>()[k], 1e-5)
          << (left ? "left" : "right") << " [" << k << "]";
  }
  TokenBatch with_empty = test::padded_batch({long_row, short_row}, 0, false);
  std::fill_n(with_empty.attention_mask.data<int32_t>() + with_empty.seq_len(), with_empty.seq_len(), 0);
  const Tensor got = model->embed(with_empty);
  for (int64_t k = 0; k < E; ++k) EXPECT_EQ(got.data<float>()[E + k], 0.0f) << k;
}

// A Qwen3-Embedding-shaped model (bare Qwen3, last-token pooling, normalised, prompts in
// config_sentence_transformers.json) against SentenceTransformer.encode, with and without the
// query prompt: cosine within 1e-5 of 1 per text (bf16 weights, f32 compute on both sides).
TEST(DecoderEmbedding, LastTokenPoolingAndPromptsMatchSentenceTransformers) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared is absent (its qwen2.5 tokenizer.json is the tokenizer)";
  const std::string dir = fixture("qwen3-embed-bf16");
  const json e = test::expected_json(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model->info().embedding);
  EXPECT_EQ(model->info().pooling, "last_token");
  EXPECT_EQ(model->info().prompts.at("query"), e["prompt"].get<std::string>());
  auto tok = Tokenizer::load(test::shared_dir() + "/tokenizers/qwen2.5");
  const auto texts = e["texts"].get<std::vector<std::string>>();
  for (const char* which : {"query", "plain"}) {
    EmbedOptions o;
    o.batch_size = 2;  // rows of different lengths in one batch: padding must not leak into the last token
    if (std::string(which) == "query") o.prompt_name = "query";
    const Embeddings got = embed_texts(*model, *tok, texts, o);
    EXPECT_EQ(got.prompt, std::string(which) == "query" ? e["prompt"].get<std::string>() : "");
    const auto want = e[which].get<std::vector<std::vector<float>>>();
    for (size_t i = 0; i < texts.size(); ++i) {
      double dot = 0, a = 0, b = 0;
      for (size_t k = 0; k < want[i].size(); ++k) {
        const double x = got.vectors.data<float>()[i * want[i].size() + k], y = want[i][k];
        dot += x * y, a += x * x, b += y * y;
      }
      EXPECT_NEAR(dot / std::sqrt(a * b), 1.0, 1e-5) << which << " text " << i;
    }
  }
  EmbedOptions bad;
  bad.prompt_name = "passage";
  EXPECT_NE(test::error_of([&] { embed_texts(*model, *tok, texts, bad); }).find("not one of"), std::string::npos);
}

}  // namespace
}  // namespace tach
