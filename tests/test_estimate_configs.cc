// tach estimate reads any decoder's config.json: every preset's and tiny Mixtral, Qwen2-MoE,
// Qwen3-MoE, DeepSeek-V3 (MLA, with and without q_lora_rank) and Granite (a model_type tach does
// not know) configs give exactly the parameter count transformers builds from them
// (scripts/golden/make_param_counts.py); unknown types are estimated with a note; a config without
// the standard fields is refused, naming them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace tach
