// tach estimate reads any decoder's config.json: every preset's and tiny Mixtral, Qwen2-MoE,
// Qwen3-MoE, DeepSeek-V3 (MLA, with and without q_lora_rank) and Granite (a model_type tach does
// not know) configs give exactly the parameter count transformers builds from them
// (scripts/golden/make_param_counts.py); unknown types are estimated with a note; a config without
// the standard fields is refused, naming them. A checkpoint with a task head (a decoder's sequence
// classifier, token classifier, question answering) counts the elements of its model.safetensors:
// the head, and no LM head beside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

std::string dir() { return test::fixtures_dir() + "/estimate"; }

MemoryEstimate estimate(const std::string& model, const std::string& mode = "inference") {
  EstimateInput in;
  in.model = model;
  in.mode = mode;
  in.dtype = "bf16";
  return estimate_memory(in);
}

TEST(EstimateConfigs, ParameterCountsEqualTransformers) {
  const json counts = json::parse(test::read_text(dir() + "/param_counts.json"))["counts"];
  ASSERT_GE(counts.size(), 20u);
  for (const auto& [key, want] : counts.items()) {
    const std::string spec = key.rfind("preset:", 0) == 0 ? key : dir() + "/" + key;
    EXPECT_EQ(estimate(spec).parameters, want.get<int64_t>()) << key;
  }
}

// A GPU runs a bf16 model's activations and key/value cache in bf16 (model/activation_dtype.h): half
// the CPU's f32 bytes for the same forward; the weights are the same.
TEST(EstimateConfigs, GpuBf16InferenceKeepsActivationsAndCacheIn16Bits) {
  auto line = [](const MemoryEstimate& m, const std::string& name) {
    for (const auto& l : m.lines)
      if (l.name == name) return l.bytes;
    return int64_t(-1);
  };
  EstimateInput in;
  in.model = "preset:qwen2.5-0.5b";
  in.dtype = "bf16";
  in.seq_len = 128;
  in.generate_tokens = 64;
  in.available_bytes = int64_t(80) << 30;  // an H100's, given: no GPU need be here
  const MemoryEstimate cpu = estimate_memory(in);
  EXPECT_EQ(cpu.available_source, "given (--available)");
  EXPECT_EQ(cpu.available_bytes, int64_t(double(int64_t(80) << 30) * 0.9));
  in.device = "cuda";
  const MemoryEstimate gpu = estimate_memory(in);
  ASSERT_GT(line(cpu, "activations (forward)"), 0);
  EXPECT_EQ(line(gpu, "activations (forward)") * 2, line(cpu, "activations (forward)"));
  EXPECT_EQ(line(gpu, "KV cache") * 2, line(cpu, "KV cache"));
  in.dtype = "f32";
  EXPECT_EQ(line(estimate_memory(in), "KV cache"), line(cpu, "KV cache"));  // f32 on a GPU stays f32
  // A GPU's int8 is weight-only (bf16 activations, no activation codes); a prompt of more rows than
  // a GEMV's dequantizes a weight into bf16 first.
  in.dtype = "int8";
  const MemoryEstimate int8 = estimate_memory(in);
  EXPECT_EQ(line(int8, "int8 activation codes"), -1);
  EXPECT_EQ(line(int8, "KV cache"), line(gpu, "KV cache"));
  EXPECT_GT(line(int8, "dequantized weight (bf16)"), 0);
  in.device = "cpu";
  EXPECT_GT(line(estimate_memory(in), "int8 activation codes"), 0);
}

// A batch no device holds is refused by name, never counted past an int64 into a negative total
// that "fits"; a large batch still finds the largest that fits below it.
TEST(EstimateConfigs, ASizeNoDeviceHoldsIsRefusedNotWrappedAround) {
  EstimateInput in;
  in.model = "preset:llama-3.2-1b";
  in.dtype = "bf16";
  in.device = "cuda";
  in.available_bytes = int64_t(80) << 30;
  in.batch = 2000000000;
  in.seq_len = 120000;
  try {
    estimate_memory(in);
    FAIL() << "a batch of 2e9 x 120000 tokens was estimated";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 512 PiB"), std::string::npos) << e.what();
  }
  in.batch = 2;
  in.seq_len = 100000;
  const MemoryEstimate e = estimate_memory(in);
  EXPECT_GT(e.total_bytes, 0);
  EXPECT_GT(e.largest_batch_that_fits, 0);
}

TEST(EstimateConfigs, MixtureOfExpertsAndLatentAttention) {
  const MemoryEstimate ds = estimate("preset:deepseek-v3");
  EXPECT_NE(ds.note.find("multi-head latent attention"), std::string::npos) << ds.note;
  EXPECT_NE(ds.note.find("58 of 61 layers with 256 routed experts"), std::string::npos) << ds.note;
  // MLA's cache: 576 values per token and layer, not 2 x 128 heads x 128.
  EstimateInput in;
  in.model = "preset:deepseek-v3";
  in.generate_tokens = 1000;
  in.seq_len = 24;
  const MemoryEstimate gen = estimate_memory(in);
  int64_t kv = 0;
  for (const auto& l : gen.lines)
    if (l.name == "KV cache") kv = l.bytes;
  EXPECT_EQ(kv, int64_t(4) * 61 * 1 * 1024 * (512 + 64));
  const MemoryEstimate mix = estimate("preset:mixtral-8x7b", "train-qlora");
  EXPECT_NE(mix.note.find("8 experts, 2 active"), std::string::npos) << mix.note;
  EXPECT_LT(mix.total_bytes, estimate("preset:mixtral-8x7b", "train-lora").total_bytes);
}

TEST(EstimateConfigs, UnknownTypesGetANoteOrARefusal) {
  const MemoryEstimate g = estimate(dir() + "/configs/granite-tiny");
  EXPECT_NE(g.note.find("not one tach builds or knows: estimated as a Llama-shaped decoder"), std::string::npos);
  test::TempDir tmp;
  test::write_text(tmp.file("config.json"), R"({"model_type": "mamba", "hidden_size": 64, "vocab_size": 10})");
  const std::string err = test::error_of([&] { estimate(tmp.path()); });
  EXPECT_NE(err.find("missing: num_hidden_layers, num_attention_heads, intermediate_size"), std::string::npos) << err;
  // A model_type that is not a string (found by fuzz_config): the same refusal, not a JSON type error.
  test::write_text(tmp.file("config.json"), R"({"model_type": 2, "intermediate_size": 48})");
  const std::string numeric = test::error_of([&] { estimate(tmp.path()); });
  EXPECT_NE(numeric.find("model_type \"?\" is not one tach builds"), std::string::npos) << numeric;
}

// The elements and bytes every tensor of a checkpoint's model.safetensors holds.
struct StoredWeights {
  int64_t elements = 0, bytes = 0;
  DType dtype = DType::f32;
};
StoredWeights stored_weights(const std::string& dir) {
  StoredWeights w;
  const auto file = model::SafetensorsFile::open(dir + "/model.safetensors");
  for (const auto& e : file.header().entries) {
    int64_t n = 1;
    for (const int64_t d : e.shape) n *= d;
    w.elements += n;
    w.bytes += int64_t(e.end - e.begin);
    w.dtype = e.dtype;
  }
  return w;
}

int64_t weights_line(const MemoryEstimate& e) {
  for (const auto& l : e.lines)
    if (l.name == "weights") return l.bytes;
  return -1;
}

// Every decoder classifier fixture (untied ones included: transformers builds no lm_head beside
// `score`) and the causal families' token-classification and question-answering checkpoints.
TEST(EstimateConfigs, TaskCheckpointsCountTheirSafetensors) {
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(test::fixtures_dir() + "/decoders"))
    if (entry.path().filename().string().find("-cls-") != std::string::npos) dirs.push_back(entry.path().string());
  ASSERT_GE(dirs.size(), 7u);
  for (const char* task : {"llama-token-cls5-f32", "qwen3-token-cls5-f32", "mistral-qa-f32", "qwen2-qa-f32"})
    dirs.push_back(test::fixtures_dir() + "/train_tasks/" + task + "/model");
  for (const auto& dir : dirs) {
    const StoredWeights w = stored_weights(dir);
    EstimateInput in;
    in.model = dir;
    in.seq_len = 16;
    in.dtype = w.dtype == DType::bf16 ? "bf16" : "f32";
    const MemoryEstimate e = estimate_memory(in);
    EXPECT_EQ(e.parameters, w.elements) << dir;
    EXPECT_EQ(weights_line(e), w.bytes) << dir << " (" << in.dtype << ")";
  }
}

// A config.json of a type tach does not build, with a task architecture: its head replaces the LM
// head (granite-tiny as a causal LM: 18,720 with tied embeddings; untied, the LM head adds V x C).
TEST(EstimateConfigs, UnknownTypesCountTheirTaskHead) {
  test::TempDir tmp;
  json config = json::parse(test::read_text(dir() + "/configs/granite-tiny/config.json"));
  const int64_t causal = 18720, V = 100, C = 32;
  config["tie_word_embeddings"] = false;
  config["architectures"] = {"GraniteForSequenceClassification"};
  config["id2label"] = {{"0", "a"}, {"1", "b"}, {"2", "c"}};
  test::write_text(tmp.file("config.json"), config.dump());
  EXPECT_EQ(estimate(tmp.path()).parameters, causal + 3 * C);
  config.erase("id2label");
  config["num_labels"] = 5;
  config["architectures"] = {"GraniteForTokenClassification"};
  test::write_text(tmp.file("config.json"), config.dump());
  EXPECT_EQ(estimate(tmp.path()).parameters, causal + 5 * C + 5);
  config.erase("num_labels");
  config["architectures"] = {"GraniteForQuestionAnswering"};
  test::write_text(tmp.file("config.json"), config.dump());
  EXPECT_EQ(estimate(tmp.path()).parameters, causal + 2 * C + 2);
  config["architectures"] = {"GraniteForCausalLM"};
  test::write_text(tmp.file("config.json"), config.dump());
  EXPECT_EQ(estimate(tmp.path()).parameters, causal + V * C);
}

// --dtype int8 quantizes a causal LM's head beside the layers; a question-answering decoder has none.
TEST(EstimateConfigs, Int8CountsNoLmHeadBesideATaskHead) {
  EstimateInput in;
  in.model = test::fixtures_dir() + "/train_tasks/llama-qa-f32/model";
  in.seq_len = 16;
  in.dtype = "int8";
  const MemoryEstimate e = estimate_memory(in);
  const auto linears = std::find_if(e.lines.begin(), e.lines.end(),
                                    [](const EstimateLine& l) { return l.name == "weights (int8 linears)"; });
  ASSERT_NE(linears, e.lines.end());
  EXPECT_EQ(linears->how.find("LM head"), std::string::npos) << linears->how;
  // The linears: every parameter but the embeddings [256, 32], 1 B each, and an f32 scale per
  // output row (fewer than 500 a layer); an LM head would add 256 x 32 B and 256 scales.
  EXPECT_LT(linears->bytes, e.parameters - 256 * 32 + 4 * 3 * 500);
  // Nor has ModernBERT's bare body.
  in.model = test::fixtures_dir() + "/decoders/modernbert-base-model-f32";
  for (const auto& l : estimate_memory(in).lines)
    EXPECT_EQ(l.how.find("LM head"), std::string::npos) << l.name << ": " << l.how;
}

// QLoRA keeps the embeddings in f32 beside the NF4 linears: an untied classifier's once, no LM head.
TEST(EstimateConfigs, QloraKeepsNoLmHeadBesideAClassifier) {
  EstimateInput in;
  in.model = test::fixtures_dir() + "/decoders/llama-cls-bias-f32";  // V 256, C 32, untied
  in.seq_len = 16;
  in.mode = "train-qlora";
  int64_t embeddings = -1;
  for (const auto& l : estimate_memory(in).lines)
    if (l.name == "weights (embeddings, kept in f32)") embeddings = l.bytes;
  EXPECT_EQ(embeddings, 256 * 32 * 4);
}

}  // namespace
}  // namespace tach
