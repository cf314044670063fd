// Every family on CUDA against transformers (the fixtures written by
// scripts/golden/make_encoder_fixtures.py and make_qwen2_fixtures.py) and against tach's own
// CPU results. Skipped, saying why, without a CUDA device or backend.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_check.h"
#include "tach/memory.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

LoadOptions on_gpu(DType compute = DType::f32) {
  LoadOptions o;
  o.device = Device::cuda(0);
  o.compute = compute;
  return o;
}

using test::expected_json;
using test::scaled_error;

class CudaModels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }
};

TEST_F(CudaModels, EncodersMatchTransformersInF32) {
  for (const char* name :
       {"bert-cls2-f32", "bert-cls3-f16", "bert-reg1-bf16", "bert-base-model-f32", "distilbert-cls2-f32",
        "distilbert-cls3-bf16", "distilbert-cls1-f16", "distilbert-base-model-f32"})
    test::check_encoder_against_transformers(test::fixtures_dir() + "/encoders/" + name, on_gpu(), 1e-4);
}

// bf16 and f16 GEMM inputs: within the rounding of the inputs, relative to the logits' scale.
TEST_F(CudaModels, EncodersInBf16AndF16StayNearTransformers) {
  for (const char* name : {"bert-cls3-f16", "distilbert-cls2-f32"}) {
    const std::string dir = test::fixtures_dir() + "/encoders/" + name;
    const json e = expected_json(dir);
    const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
    std::vector<std::vector<int32_t>> types;
    if (!e["token_type_rows"].is_null()) types = e["token_type_rows"].get<std::vector<std::vector<int32_t>>>();
    const TokenBatch batch = TokenBatch::from_rows(rows, e["pad_id"].get<int32_t>(), types);
    const auto want = e["logits"].get<std::vector<std::vector<float>>>();
    for (DType dt : {DType::bf16, DType::f16}) {
      Tensor logits = load_model(dir, on_gpu(dt))->classify(batch);
      for (size_t r = 0; r < want.size(); ++r)
        EXPECT_LT(scaled_error(logits.data<float>() + r * want[r].size(), want[r]), dt == DType::bf16 ? 2e-2 : 4e-3)
            << name << " " << dtype_name(dt) << " row " << r;
    }
  }
}

TEST_F(CudaModels, Qwen2ClassifierMatchesTransformersRightAndLeftPadded) {
  for (const char* name : {"qwen2-cls-kv1-f32", "qwen2-cls-kv2-bf16"}) {
    const std::string dir = test::fixtures_dir() + "/decoders/" + name;
    auto model = load_model(dir, on_gpu());
    EXPECT_EQ(model->info().device, Device::cuda(0));
    test::check_decoder_classifier_against_transformers(*model, dir);
  }
}

TEST_F(CudaModels, Qwen2LogitsAndGreedyTokensMatchTransformers) {
  for (const char* name :
       {"qwen2-lm-kv4-untied-f32", "qwen2-lm-kv2-tied-f16", "qwen2-lm-rope-linear-f32", "qwen2-lm-rope-dynamic-f32"}) {
    const std::string dir = test::fixtures_dir() + "/decoders/" + name;
    (void)test::check_decoder_lm_against_transformers(*load_model(dir, on_gpu()), dir);
  }
}

// The weights live on the device and are counted there, by category; nothing of the model's
// stays in the CPU ledger beyond what the host copy of the batch and the logits need.
TEST_F(CudaModels, WeightsAreCountedOnTheDevice) {
  const MemoryStats before = memory_stats(Device::cuda(0));
  auto model = load_model("preset:bert-tiny", on_gpu());
  const MemoryStats after = memory_stats(Device::cuda(0));
  EXPECT_GT(after[MemoryCategory::weights].current - before[MemoryCategory::weights].current,
            model->info().parameters * 4 * 9 / 10);
  // One forward on the device gives what the CPU gives, to f32 rounding.
  auto cpu_model = load_model("preset:bert-tiny");
  const TokenBatch batch = TokenBatch::from_rows({{101, 2023, 2003, 102}, {101, 7592, 102}}, 0);
  Tensor a = model->classify(batch), b = cpu_model->classify(batch);
  for (int64_t i = 0; i < a.numel(); ++i)
    EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-4 * (1 + std::fabs(b.data<float>()[i])));
}

// The families added after the backend was written, on the GPU against the same transformers
// outputs the CPU is checked against: RoBERTa, XLM-RoBERTa and MPNet (its relative position bias
// in the fused attention kernel); Llama, Mistral (sliding windows), Qwen3 (per-head q/k norms),
// Gemma 3 (tanh-GELU gate, embedding scale, sandwich norms, softcapped logits) and ModernBERT
// (bidirectional local windows, pre-norm LayerNorm without bias, GeGLU, mean pooling).
class CudaEncoderFamilies : public CudaModels, public ::testing::WithParamInterface<const char*> {};

TEST_P(CudaEncoderFamilies, MatchTransformers) {
  test::check_encoder_against_transformers(test::fixtures_dir() + "/encoders/" + GetParam(), on_gpu(), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaEncoderFamilies,
                         ::testing::Values("roberta-cls2-f32", "roberta-base-model-f32", "xlm-roberta-cls3-bf16",
                                           "xlm-roberta-base-model-f32", "mpnet-cls2-f32", "mpnet-base-model-f32"));

class CudaDecoderClassifiers : public CudaModels, public ::testing::WithParamInterface<const char*> {};

TEST_P(CudaDecoderClassifiers, RightAndLeftPaddedLogitsMatchTransformers) {
  const std::string dir = test::fixtures_dir() + "/decoders/" + GetParam();
  auto model = load_model(dir, on_gpu());
  EXPECT_EQ(model->info().device, Device::cuda(0));
  test::check_decoder_classifier_against_transformers(*model, dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaDecoderClassifiers,
                         ::testing::Values("llama-cls-bias-f32", "mistral-cls-window4-f32", "qwen3-cls-headdim16-f32",
                                           "gemma3-cls-f32", "modernbert-cls-mean-f32", "modernbert-cls-bias-bf16"));

class CudaDecoderLMs : public CudaModels, public ::testing::WithParamInterface<const char*> {};

TEST_P(CudaDecoderLMs, LogitsAndGreedyTokensMatchTransformers) {
  const std::string dir = test::fixtures_dir() + "/decoders/" + GetParam();
  (void)test::check_decoder_lm_against_transformers(*load_model(dir, on_gpu()), dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaDecoderLMs,
                         ::testing::Values("llama-lm-llama3rope-f32", "llama-lm-yarn-bf16", "mistral-lm-window4-f32",
                                           "qwen3-lm-window-bf16", "gemma3-lm-bf16", "gemma3-lm-softcap-f32"));

// Decoding's steps replayed from one captured CUDA graph (the length, tokens and positions read
// on the device, the argmax there) give the tokens of kernel-by-kernel steps and of the CPU: a
// left-padded batch, a sliding window, Gemma's softcap and local RoPE, YaRN in bf16.
TEST_F(CudaModels, CapturedDecodeStepsMatchKernelByKernelAndTheCpu) {
  for (const char* name :
       {"qwen2-lm-kv4-untied-f32", "mistral-lm-window4-f32", "gemma3-lm-softcap-f32", "llama-lm-yarn-bf16"}) {
    const std::string dir = test::fixtures_dir() + "/decoders/" + name;
    auto model = load_model(dir, on_gpu());
    const TokenBatch prompts = TokenBatch::left_padded({{5, 9, 2, 7, 11, 3}, {4, 8}, {6}}, model->info().pad_token_id);
    GenerateOptions o;
    o.max_new_tokens = 12, o.stop_at_eos = false;
    const Generation graph = model->generate(prompts, o);
    EXPECT_NE(graph.decode_method.find("CUDA graph"), std::string::npos) << name << ": " << graph.decode_method;
    o.cuda_graphs = false;
    const Generation eager = model->generate(prompts, o);
    EXPECT_NE(eager.decode_method.find("not asked for"), std::string::npos) << eager.decode_method;
    EXPECT_EQ(graph.tokens, eager.tokens) << name;
    if (std::string(name).find("f32") == std::string::npos) continue;  // bf16 rounds differently on the CPU
    EXPECT_EQ(graph.tokens, load_model(dir)->generate(prompts, o).tokens) << name << " against the CPU";
  }
}

// ModernBERT's bare model: final-normed hidden states at every real token, right- and left-padded.
TEST_F(CudaModels, ModernBertHiddenStatesMatchTransformers) {
  const std::string dir = test::fixtures_dir() + "/decoders/modernbert-base-model-f32";
  test::check_hidden_states_against_transformers(*load_model(dir, on_gpu()), dir);
}

TEST(CudaModelsWithoutGpu, LoadingOnCudaSaysWhyNot) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present; this checks the refusal without one";
  const std::string e = test::error_of([] { (void)load_model("preset:bert-tiny", on_gpu()); });
  EXPECT_NE(e.find("cuda:0"), std::string::npos) << e;
}

}  // namespace
}  // namespace tach
