// Sentence embeddings: modules.json and the pooling configs read as sentence-transformers reads
// them, every pooling mode against sentence-transformers' own Pooling module (right and left
// padding), the .npy/.jsonl writer, and (golden, when the real checkpoint can be had)
// all-MiniLM-L6-v2 against SentenceTransformer.encode and transformers' hidden states.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cpu/gemm.h"
#include "model/safetensors.h"
#include "model/sentence_config.h"
#include "ops/pooling.h"
#include "tach/dataset.h"
#include "tach/embed.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/tokenizer.h"
#include "test_util.h"

namespace tach {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_json(const std::string& path) { return json::parse(test::read_text(path)); }

// types: whether the model has token types (BERT does; MPNet refuses them).
TokenBatch batch_of(const json& side, bool types = true) {
  const auto ids = side["input_ids"].get<std::vector<std::vector<int32_t>>>();
  const auto mask = side["attention_mask"].get<std::vector<std::vector<int32_t>>>();
  const auto B = int64_t(ids.size()), T = int64_t(ids[0].size());
  TokenBatch b;
  b.input_ids = Tensor::empty({B, T}, DType::i32);
  b.attention_mask = Tensor::empty({B, T}, DType::i32);
  if (types) b.token_type_ids = Tensor::zeros({B, T}, DType::i32);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t t = 0; t < T; ++t) {
      b.input_ids.data<int32_t>()[r * T + t] = ids[size_t(r)][size_t(t)];
      b.attention_mask.data<int32_t>()[r * T + t] = mask[size_t(r)][size_t(t)];
    }
  return b;
}

// A sentence-transformers directory around a tiny bare encoder (BERT's unless named), with the
// case's files (and the files it copies from tests/fixtures: Dense modules' configs and weights).
void write_case(const std::string& dir, const json& files, const json& copies = json::object(),
                const std::string& body = "encoders/bert-base-model-f32") {
  const std::string base = test::fixtures_dir() + "/" + body;
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(base + "/" + f, dir + "/" + f);
  for (const auto& [name, content] : files.items()) {
    fs::create_directories(fs::path(dir + "/" + name).parent_path());
    test::write_text(dir + "/" + name, content.dump());
  }
  for (const auto& [name, from] : copies.items()) {
    fs::create_directories(fs::path(dir + "/" + name).parent_path());
    fs::copy_file(test::fixtures_dir() + "/" + from.get<std::string>(), dir + "/" + name);
  }
  test::write_text(dir + "/sentence_bert_config.json", R"({"max_seq_length": 512, "do_lower_case": false})");
}

TEST(Embedding, EveryPoolingModeMatchesSentenceTransformers) {
  const json cases = read_json(test::fixtures_dir() + "/embeddings/pooling_cases.json");
  ASSERT_GE(cases["cases"].size(), 7u);
  for (const auto& [name, c] : cases["cases"].items()) {
    test::TempDir dir;
    write_case(dir.path(), c["files"], c.value("copy", json::object()));
    auto model = load_model(dir.path());
    ASSERT_TRUE(model->info().embedding) << name;
    for (const char* side : {"right", "left"}) {
      const Tensor got = model->embed(batch_of(cases[side]));
      const auto want = c[side].get<std::vector<std::vector<float>>>();
      ASSERT_EQ(got.size(0), int64_t(want.size())) << name;
      ASSERT_EQ(got.size(1), int64_t(want[0].size())) << name << " " << model->info().pooling;
      for (size_t r = 0; r < want.size(); ++r)
        for (size_t k = 0; k < want[r].size(); ++k)
          ASSERT_NEAR(got.data<float>()[int64_t(r) * got.size(1) + int64_t(k)], want[r][k], 2e-5)
              << name << " " << side << " row " << r << " [" << k << "]";
    }
  }
}

// cls pooling alone reads each row's first token, so the encoder's last layer runs for it only
// (the vectors above are unchanged); last-token pooling on an encoder, and mean pooling, pool the
// whole forward. The declared costs say which ran. hidden_rows refuses rows that do not fit.
TEST(Embedding, OneTokenPoolingRunsTheLastLayerForThatTokenOnly) {
  const json cases = read_json(test::fixtures_dir() + "/embeddings/pooling_cases.json");
  constexpr int64_t B = 2, T = 16;
  const auto cost_of = [&](const char* name) {
    test::TempDir dir;
    write_case(dir.path(), cases["cases"][name]["files"], cases["cases"][name].value("copy", json::object()));
    auto model = load_model(dir.path());
    return std::pair{model->forward_cost(B, T).flops, model->hidden_states_cost(B, T).flops};
  };
  const auto [cls, cls_body] = cost_of("cls-dense-identity-nobias-dense-tanh");
  EXPECT_LT(cls, cls_body) << "the last layer's W_o and FFN for 2 rows of 32, Dense layers included";
  const auto [last, last_body] = cost_of("lasttoken");
  EXPECT_GE(last, last_body);
  const auto [mean, mean_body] = cost_of("mean-normalize");
  EXPECT_GT(mean, mean_body);

  test::TempDir dir;
  write_case(dir.path(), cases["cases"]["lasttoken"]["files"]);
  auto model = load_model(dir.path());
  const TokenBatch batch = batch_of(cases["right"]);
  EXPECT_NE(test::error_of([&] { model->hidden_rows(batch, {0}); }).find("rows for a batch of"), std::string::npos);
  EXPECT_NE(test::error_of([&] {
              model->hidden_rows(batch, std::vector<int64_t>(size_t(batch.batch()), -1));
            }).find("outside the"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] {
              model->hidden_rows(batch, std::vector<int64_t>(size_t(batch.batch()), batch.seq_len()));
            }).find("outside the"),
            std::string::npos);
}

// RoBERTa's, XLM-RoBERTa's, MPNet's and ModernBERT's bare models pooled as their sentence-embedding
// checkpoints are (mean or CLS), on their own rows (pad id 1, positions after it).
TEST(Embedding, EveryEncoderFamilyMatchesSentenceTransformers) {
  const json cases = read_json(test::fixtures_dir() + "/embeddings/pooling_cases.json");
  ASSERT_GE(cases["bodies"].size(), 3u);
  for (const auto& [body, b] : cases["bodies"].items())
    for (const auto& [name, c] : b["cases"].items()) {
      test::TempDir dir;
      write_case(dir.path(), c["files"], json::object(), b["base"].get<std::string>());
      auto model = load_model(dir.path());
      const Tensor got = model->embed(batch_of(b["right"], model->info().type_vocab_size > 0));
      const auto want = c["right"].get<std::vector<std::vector<float>>>();
      ASSERT_EQ(got.size(0), int64_t(want.size())) << body << " " << name;
      for (size_t r = 0; r < want.size(); ++r)
        for (size_t k = 0; k < want[r].size(); ++k)
          ASSERT_NEAR(got.data<float>()[int64_t(r) * got.size(1) + int64_t(k)], want[r][k], 2e-5)
              << body << " " << name << " row " << r << " [" << k << "]";
    }
}

TEST(Embedding, ModelInfoSaysHowItPools) {
  const json cases = read_json(test::fixtures_dir() + "/embeddings/pooling_cases.json");
  test::TempDir dir;
  write_case(dir.path(), cases["cases"]["sqrt-weighted"]["files"]);
  auto model = load_model(dir.path());
  EXPECT_EQ(model->info().pooling, "mean_sqrt_len+weighted_mean");
  EXPECT_TRUE(model->info().normalized);
  EXPECT_EQ(model->info().embedding_dim, 32);
  EXPECT_EQ(model->info().max_seq_length, model->info().max_positions);  // 512 capped by the positions
  // What bench and profile time: the pooled vectors, and their cost includes the pooling.
  const Tensor v = model->measured_forward(batch_of(cases["right"]));
  EXPECT_EQ(v.size(1), 32);
}

TEST(Embedding, BareEncoderWithoutModulesJsonGetsMeanPooling) {
  auto model = load_model(test::fixtures_dir() + "/encoders/bert-base-model-f32");
  EXPECT_TRUE(model->info().embedding);
  EXPECT_EQ(model->info().pooling, "mean");
  EXPECT_FALSE(model->info().normalized);
  bool noted = false;
  for (const auto& n : model->info().notes) noted |= n.find("no modules.json") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Embedding, ClassifierIsNotAnEmbeddingModel) {
  auto model = load_model(test::fixtures_dir() + "/encoders/bert-cls2-f32");
  EXPECT_FALSE(model->info().embedding);
  const TokenBatch b = TokenBatch::from_rows({{101, 7, 102}}, 0);
  EXPECT_NE(test::error_of([&] { model->embed(b); }).find("is not an embedding model"), std::string::npos);
}

TEST(Embedding, ConfigsTachCannotRunAreRefusedByName) {
  auto attempt = [](const std::string& modules, const std::string& pooling) {
    test::TempDir dir;
    test::write_text(dir.file("modules.json"), modules);
    if (!pooling.empty()) {
      fs::create_directories(dir.file("1_Pooling"));
      test::write_text(dir.file("1_Pooling/config.json"), pooling);
    }
    return test::error_of([&] { model::read_sentence_embedding_config(dir.path()); });
  };
  const std::string tp = R"({"type": "sentence_transformers.models.Transformer", "path": ""})";
  const std::string pp = R"({"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"})";
  const std::string ok_pool = R"({"word_embedding_dimension": 16, "pooling_mode_mean_tokens": true})";
  // A Dense module needs its config; one on the token embeddings, or with another activation, is refused.
  const std::string dense = R"(, {"type": "sentence_transformers.models.Dense", "path": "2_Dense"}])";
  EXPECT_NE(attempt("[" + tp + "," + pp + dense, ok_pool).find("names a Dense module in '2_Dense', but"),
            std::string::npos);
  auto with_dense = [&](const std::string& dense_config) {
    test::TempDir dir;
    test::write_text(dir.file("modules.json"), "[" + tp + "," + pp + dense);
    fs::create_directories(dir.file("1_Pooling"));
    test::write_text(dir.file("1_Pooling/config.json"), ok_pool);
    fs::create_directories(dir.file("2_Dense"));
    test::write_text(dir.file("2_Dense/config.json"), dense_config);
    return test::error_of([&] { model::read_sentence_embedding_config(dir.path()); });
  };
  EXPECT_NE(
      with_dense(R"({"in_features": 16, "out_features": 8, "activation_function": "torch.nn.modules.activation.ReLU"})")
          .find("activation_function 'torch.nn.modules.activation.ReLU' is not one tach runs"),
      std::string::npos);
  EXPECT_NE(with_dense(R"({"in_features": 16, "out_features": 8, "module_input_name": "token_embeddings"})")
                .find("on the pooled sentence embedding only"),
            std::string::npos);
  EXPECT_NE(with_dense(R"({"in_features": 0, "out_features": 8})").find("\"in_features\" must be a positive integer"),
            std::string::npos);
  EXPECT_EQ(with_dense(R"({"in_features": 16, "out_features": 8})"), "(no error)");
  EXPECT_NE(attempt("[" + tp + "," + pp + "]", R"({"pooling_mode": "median"})").find("pooling mode 'median'"),
            std::string::npos);
  EXPECT_NE(
      attempt("[" + tp + "," + pp + "]", R"({"pooling_mode": "mean", "include_prompt": false})").find("include_prompt"),
      std::string::npos);
  EXPECT_NE(attempt("[" + tp + "," + pp + "]", "").find("does not exist"), std::string::npos);
  EXPECT_NE(attempt("[" + tp + "," + pp, ok_pool).find("modules.json"), std::string::npos);  // malformed JSON
  EXPECT_NE(attempt("[" + pp + "]", ok_pool).find("not one tach runs"), std::string::npos);  // no Transformer first
  EXPECT_EQ(attempt("[" + tp + "," + pp + "]", ok_pool), "(no error)");
}

// A Dense module's weights: absent, pickled, or of the wrong width are errors naming the file.
TEST(Embedding, DenseWeightsThatCannotBeUsedAreClearErrors) {
  const json cases = read_json(test::fixtures_dir() + "/embeddings/pooling_cases.json");
  const json& c = cases["cases"]["mean-dense-tanh-normalize"];
  auto error_with = [&](const std::function<void(const std::string&)>& spoil) {
    test::TempDir dir;
    write_case(dir.path(), c["files"], c["copy"]);
    spoil(dir.path());
    return test::error_of([&] { load_model(dir.path()); });
  };
  EXPECT_NE(error_with([](const std::string& d) {
              fs::remove(d + "/2_Dense/model.safetensors");
            }).find("2_Dense/model.safetensors does not exist"),
            std::string::npos);
  EXPECT_NE(error_with([](const std::string& d) {
              fs::remove(d + "/2_Dense/model.safetensors");
              test::write_text(d + "/2_Dense/pytorch_model.bin", "not read");
            }).find("does not read pickle files"),
            std::string::npos);
  EXPECT_NE(error_with([](const std::string& d) {
              test::write_text(d + "/2_Dense/config.json", R"({"in_features": 32, "out_features": 8})");
            }).find("the Dense module takes 32 features, but what comes before it gives 16"),
            std::string::npos);
  EXPECT_NE(error_with([](const std::string& d) {
              test::write_text(d + "/2_Dense/config.json", R"({"in_features": 16, "out_features": 9})");
            }).find("'linear.weight' is [8, 16], expected [9, 16]"),
            std::string::npos);
}

TEST(Embedding, DoLowerCaseLowercasesTextsAsTheLowercaseNormalizer) {
  EXPECT_EQ(lowercase_text("ÀB Σ İstanbul HELLO"), "àb σ i̇stanbul hello");  // Unicode, not ASCII only
  test::TempDir dir;
  write_case(dir.path(), json{{"modules.json",
                               json::parse(R"([{"type": "sentence_transformers.models.Transformer", "path": ""}])")}});
  test::write_text(dir.file("sentence_bert_config.json"), R"({"max_seq_length": 7, "do_lower_case": true})");
  auto model = load_model(dir.path());
  EXPECT_TRUE(model->info().lowercase_input);
  EXPECT_EQ(model->info().max_seq_length, 7);
  EXPECT_EQ(model->info().pooling, "mean");  // no Pooling module: sentence-transformers adds mean pooling
}

TEST(Embedding, DimensionThatDoesNotMatchTheModelIsAnError) {
  test::TempDir dir;
  write_case(dir.path(),
             json{{"modules.json", json::parse(R"([{"type": "sentence_transformers.models.Transformer", "path": ""},
      {"type": "sentence_transformers.models.Pooling", "path": "1_Pooling"}])")},
                  {"1_Pooling/config.json", json{{"word_embedding_dimension", 768}}}});
  EXPECT_NE(test::error_of([&] { load_model(dir.path()); }).find("word_embedding_dimension is 768"), std::string::npos);
}

TEST(Embedding, PoolingOfRowsOfPaddingOnly) {
  // [B=1, T=2, C=2], mask all zero: sentence-transformers gives zeros (mean, last token), -inf (max).
  Tensor h = Tensor::empty({1, 2, 2}, DType::f32);
  for (int i = 0; i < 4; ++i) h.data<float>()[i] = float(i + 1);
  Tensor mask = Tensor::zeros({1, 2}, DType::i32);
  using M = ops::PoolingMode;
  Tensor out = Tensor::empty({1, 6}, DType::f32);
  ops::pooling_forward(out, h, mask, {M::mean, M::last_token, M::max});
  const float* o = out.data<float>();
  EXPECT_EQ(o[0], 0.0f);
  EXPECT_EQ(o[2], 0.0f);
  EXPECT_TRUE(std::isinf(o[4]) && o[4] < 0);
  Tensor z = Tensor::zeros({1, 3}, DType::f32);
  ops::l2_normalize_forward(z);  // a zero vector stays zero (the norm is clamped at 1e-12)
  EXPECT_EQ(z.data<float>()[0], 0.0f);
}

TEST(Embedding, WritesNpyAndJsonl) {
  Embeddings e;
  e.vectors = Tensor::empty({2, 3}, DType::f32);
  for (int i = 0; i < 6; ++i) e.vectors.data<float>()[i] = 0.5f * float(i);
  e.tokens = {3, 5};
  e.truncated = {false, true};
  test::TempDir dir;
  write_embeddings(dir.file("v.npy"), e, {"a", "b"});
  const std::string npy = test::read_text(dir.file("v.npy"));
  ASSERT_GE(npy.size(), 128u);
  EXPECT_EQ(npy.substr(0, 6), "\x93NUMPY");
  const size_t header = 10 + size_t(uint8_t(npy[8])) + 256 * size_t(uint8_t(npy[9]));
  EXPECT_EQ(header % 64, 0u);  // the data starts aligned, as numpy writes it
  EXPECT_NE(npy.find("'shape': (2, 3)"), std::string::npos);
  EXPECT_NE(npy.find("'descr': '<f4'"), std::string::npos);
  ASSERT_EQ(npy.size(), header + 6 * sizeof(float));
  float last;
  std::memcpy(&last, npy.data() + header + 5 * sizeof(float), sizeof(float));
  EXPECT_EQ(last, 2.5f);
  write_embeddings(dir.file("v.jsonl"), e, {"a", "b"});
  std::ifstream in(dir.file("v.jsonl"));
  std::string line;
  std::vector<json> rows;
  while (std::getline(in, line)) rows.push_back(json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["text"], "b");
  EXPECT_EQ(rows[1]["truncated"], true);
  EXPECT_EQ(rows[1]["embedding"][2].get<float>(), 2.5f);
  EXPECT_NE(test::error_of([&] {
              write_embeddings(dir.file("v.txt"), e, {"a", "b"});
            }).find(".npy or .jsonl"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir.file("v.txt")));
}

// ---- the real checkpoint (golden): all-MiniLM-L6-v2 ----

std::string minilm_dir() {
  if (const char* d = std::getenv("TACH_MINILM_DIR"); d && *d) return d;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/tach-models/all-MiniLM-L6-v2";
}

// The model as published, fetched by ../shared/tools/get-minilm (sha256-checked) when it is not
// there yet; empty with the reason in *why when it cannot be had.
std::string fetch_minilm(std::string* why) {
  std::string dir = minilm_dir();
  if (fs::exists(dir + "/model.safetensors") && fs::exists(dir + "/modules.json")) return dir;
  const std::string tool = test::shared_dir() + "/tools/get-minilm";
  if (!fs::exists(tool)) {
    *why = "all-MiniLM-L6-v2 is not at " + dir + " and " + tool + " (which fetches it) is absent";
    return "";
  }
  const std::string cmd = "'" + tool + "' '" + dir + "' > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0 || !fs::exists(dir + "/model.safetensors")) {
    *why = tool + " could not fetch all-MiniLM-L6-v2 into " + dir + " (no network?)";
    return "";
  }
  return dir;
}

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

class MiniLM : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    dir_ = fetch_minilm(&why);
    if (dir_.empty()) GTEST_SKIP() << why;
    ref_ = std::make_unique<model::SafetensorsFile>(
        model::SafetensorsFile::open(test::fixtures_dir() + "/embeddings/minilm.safetensors"));
    texts_ = read_json(test::fixtures_dir() + "/embeddings/minilm_texts.json");
  }
  Tensor ref(const std::string& name) const { return ref_->tensor(*ref_->find(name)).to(DType::f32); }
  std::string dir_;
  std::unique_ptr<model::SafetensorsFile> ref_;
  json texts_;
};

TEST_F(MiniLM, Sst2DevEmbeddingsMatchSentenceTransformers) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared (SST-2 dev) is absent";
  DatasetOptions d;
  d.path = test::shared_dir() + "/data/sst2/dev.tsv";
  d.label_column.clear();
  std::vector<std::string> texts;
  for (auto& e : read_dataset(d).examples) texts.push_back(e.text);
  auto model = load_model(dir_);
  auto tok = Tokenizer::load(dir_);
  const Embeddings e = embed_texts(*model, *tok, texts);
  const Tensor want = ref("sst2_dev");
  ASSERT_EQ(e.vectors.size(0), want.size(0));
  ASSERT_EQ(e.vectors.size(1), 384);
  double worst = 1;
  for (int64_t i = 0; i < want.size(0); ++i)
    worst = std::min(worst, cosine(e.vectors.data<float>() + i * 384, want.data<float>() + i * 384, 384));
  EXPECT_GE(worst, 0.99999) << "the least similar of " << want.size(0) << " SST-2 dev sentences";
}

TEST_F(MiniLM, HardTextsMatchInF32AndBf16) {
  const auto texts = texts_["hard_texts"].get<std::vector<std::string>>();
  auto tok = Tokenizer::load(dir_);
  for (DType dt : {DType::f32, DType::bf16}) {
    if (dt == DType::bf16 && !cpu::onednn_bf16_supported()) {
      std::cout << "note: the bf16 half is left out: no bf16 GEMM on this CPU (oneDNN 2.6 needs AVX-512 for it)\n";
      continue;
    }
    LoadOptions lo;
    lo.compute = dt;
    auto model = load_model(dir_, lo);
    // Batch size 3: the long text shares a batch with short ones, so padding is exercised.
    EmbedOptions eo;
    eo.batch_size = 3;
    const Embeddings e = embed_texts(*model, *tok, texts, eo);
    EXPECT_EQ(e.max_length, 256);
    const Tensor f32 = ref("hard"), bf16 = ref("hard_bf16");
    for (size_t i = 0; i < texts.size(); ++i) {
      const float* got = e.vectors.data<float>() + int64_t(i) * 384;
      const double c = cosine(got, f32.data<float>() + int64_t(i) * 384, 384);
      if (dt == DType::f32) {
        EXPECT_GE(c, 0.99999) << "text " << i << ": '" << texts[i] << "'";
      } else {
        // bf16 GEMM inputs (8 significant bits): as close to the f32 reference as
        // sentence-transformers' own bf16 run is, within a margin.
        const double st_bf16 = cosine(bf16.data<float>() + int64_t(i) * 384, f32.data<float>() + int64_t(i) * 384, 384);
        EXPECT_GE(c, std::min(0.999, st_bf16 - 0.002))
            << "text " << i << " (sentence-transformers bf16: " << st_bf16 << ")";
      }
    }
    EXPECT_TRUE(e.truncated.back()) << "the long text is cut at 256 tokens";
    EXPECT_EQ(e.tokens.back(), 256);
  }
}

TEST_F(MiniLM, LastHiddenStatesMatchTransformers) {
  const auto texts = texts_["hard_texts"].get<std::vector<std::string>>();
  auto model = load_model(dir_);
  auto tok = Tokenizer::load(dir_);
  EncodeOptions eo;
  eo.truncation = Truncation{};
  eo.truncation->max_length = 256;
  for (size_t i = 0; i < texts.size(); ++i) {
    const Encoding enc = tok->encode(texts[i], eo);
    const TokenBatch b = TokenBatch::from_rows({enc.ids}, 0, {enc.type_ids});
    const Tensor h = model->hidden_states(b);                // [1, T, 384]
    const Tensor want = ref("hidden." + std::to_string(i));  // [T, 384], stored as f16
    ASSERT_EQ(h.numel(), want.numel()) << "text " << i;
    // f16 storage rounds by up to 2^-11 relative; tach and transformers differ by ~1e-5.
    double worst = 0;
    for (int64_t k = 0; k < want.numel(); ++k) {
      const double w = want.data<float>()[k], g = h.data<float>()[k];
      worst = std::max(worst, std::abs(g - w) / (std::abs(w) * 1e-3 + 1e-3));
    }
    EXPECT_LE(worst, 1.0) << "text " << i << ": '" << texts[i].substr(0, 40) << "'";
  }
}

}  // namespace
}  // namespace tach
