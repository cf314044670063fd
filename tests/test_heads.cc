// The per-token heads (masked LM, token classification, question answering) of every encoder
// family against Hugging Face transformers, on tiny random checkpoints transformers itself wrote
// (scripts/golden/make_head_fixtures.py): outputs within 1e-4 for batches padded on the right and
// on the left, and transformers' parameter counts. Then the heads a checkpoint was not published
// with: built new, or left out.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/safetensors_writer.h"
#include "tach/device.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "tach/model.h"
#include "test_util.h"

namespace tach {
namespace {

using json = nlohmann::json;

std::string heads_dir() { return test::fixtures_dir() + "/heads/"; }

json expected_of(const std::string& name) {
  std::ifstream in(heads_dir() + name + "/expected.json");
  EXPECT_TRUE(in) << "missing " << heads_dir() << name << "/expected.json";
  return json::parse(in);
}

TokenBatch padded(const std::vector<std::vector<int32_t>>& rows, int32_t pad, bool left) {
  if (!left) return TokenBatch::from_rows(rows, pad);
  return TokenBatch::left_padded(rows, pad);
}

// Compares [B, T, outputs] with transformers' [row][real token][output] (padding skipped).
void expect_logits(const Tensor& got, const json& want, const std::vector<std::vector<int32_t>>& rows, bool left,
                   const std::string& what) {
  const int64_t T = got.size(1), O = got.size(2);
  double worst = 0;
  for (size_t b = 0; b < rows.size(); ++b) {
    const int64_t n = int64_t(rows[b].size()), first = left ? T - n : 0;
    ASSERT_EQ(int64_t(want[b].size()), n) << what;
    for (int64_t t = 0; t < n; ++t) {
      ASSERT_EQ(int64_t(want[b][size_t(t)].size()), O) << what << ": outputs per token";
      for (int64_t o = 0; o < O; ++o) {
        const double g = got.data<float>()[(int64_t(b) * T + first + t) * O + o];
        const double w = want[b][size_t(t)][size_t(o)].get<double>();
        worst = std::max(worst, std::abs(g - w));
      }
    }
  }
  EXPECT_LT(worst, 1e-4) << what << ": largest difference from transformers";
}

class GoldenHead : public ::testing::TestWithParam<std::string> {};

void check_against_transformers(const std::string& name, const LoadOptions& options) {
  const json e = expected_of(name);
  auto model = load_model(heads_dir() + name, options);
  const ModelInfo& info = model->info();
  EXPECT_EQ(info.architecture, e["architecture"].get<std::string>());
  EXPECT_EQ(info.parameters, e["parameters"].get<int64_t>()) << "transformers' parameter count";
  EXPECT_EQ(info.head, info.checkpoint_head);
  EXPECT_FALSE(info.classifier);
  const auto rows = e["input_rows"].get<std::vector<std::vector<int32_t>>>();
  const int32_t pad = e["pad_id"].get<int32_t>();
  for (const bool left : {false, true}) {
    const Tensor logits = model->token_logits(padded(rows, pad, left));
    ASSERT_EQ(logits.dim(), 3);
    expect_logits(logits, e[left ? "logits_left" : "logits_right"], rows, left, name + (left ? " left" : " right"));
  }
}

TEST_P(GoldenHead, MatchesTransformers) { check_against_transformers(GetParam(), {}); }

// The heads run through the ops' dispatch: on a GPU, the same values in f32.
TEST_P(GoldenHead, MatchesTransformersOnCuda) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  LoadOptions o;
  o.device = Device::cuda(0);
  check_against_transformers(GetParam(), o);
}

// The causal decoder families with a token classifier and question answering in transformers.
constexpr const char* kCausalFamilies[] = {"llama", "mistral", "qwen2", "qwen3"};

std::vector<std::string> head_cases() {
  std::vector<std::string> v;
  for (const char* family : {"bert", "distilbert", "roberta", "xlm-roberta", "mpnet", "modernbert"})
    for (const char* head : {"mlm", "tokcls", "qa"}) v.push_back(std::string(family) + "-" + head + "-f32");
  for (const char* extra : {"bert-mlm-untied-f32", "roberta-mlm-untied-f32", "modernbert-mlm-bias-f32"})
    v.push_back(extra);
  for (const char* family : kCausalFamilies)
    for (const char* head : {"tokcls", "qa"}) v.push_back(std::string(family) + "-" + head + "-f32");
  return v;
}

// A causal family builds the per-token heads transformers has for it, not a masked LM.
bool builds_head(const std::string& name, Head h) {
  for (const char* family : kCausalFamilies)
    if (name.rfind(std::string(family) + "-", 0) == 0) return h != Head::masked_lm;
  return true;
}

// tach estimate counts what load_model builds: the checkpoint's head, or another made new.
TEST_P(GoldenHead, EstimateCountsTheHeadBuilt) {
  const std::string name = GetParam();
  EstimateInput in;
  in.model = heads_dir() + name;
  in.seq_len = 16;
  EXPECT_EQ(estimate_memory(in).parameters, expected_of(name)["parameters"].get<int64_t>());
  for (const Head h : {Head::none, Head::sequence_classification, Head::token_classification, Head::question_answering,
                       Head::masked_lm}) {
    if (!builds_head(name, h)) continue;
    in.head = h;
    in.new_head_labels = 3;
    LoadOptions o;
    o.head = h;
    o.new_head_labels = 3;
    EXPECT_EQ(estimate_memory(in).parameters, load_model(heads_dir() + name, o)->info().parameters)
        << name << " with --head " << head_name(h);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenHead, ::testing::ValuesIn(head_cases()), [](const auto& p) {
  std::string s = p.param;
  for (auto& c : s)
    if (c == '-') c = '_';
  return s;
});

TEST(Heads, NamesParseBothWays) {
  for (const Head h : {Head::none, Head::sequence_classification, Head::token_classification, Head::question_answering,
                       Head::masked_lm})
    EXPECT_EQ(parse_head(head_name(h)), h);
  EXPECT_EQ(parse_head("auto"), std::nullopt);
  try {
    parse_head("mlm");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find("masked-lm"), std::string::npos) << e.what(); }
}

// What a head reads of a masked-LM checkpoint: the body as published, the MLM tensors left out.
TEST(Heads, MaskedLmCheckpointAsBareBody) {
  LoadOptions o;
  o.head = Head::none;
  auto bare = load_model(heads_dir() + "bert-mlm-f32", o);
  EXPECT_EQ(bare->info().head, Head::none);
  EXPECT_EQ(bare->info().checkpoint_head, Head::masked_lm);
  EXPECT_EQ(bare->info().architecture, "BertModel");
  // transformers' BertForMaskedLM has no pooler; its body is the count less the head's
  // dense (C*C + C), LayerNorm (2C) and bias (V).
  const int64_t C = 16, V = 120, all = expected_of("bert-mlm-f32")["parameters"].get<int64_t>();
  EXPECT_EQ(bare->info().parameters, all - (C * C + C + 2 * C + V));
  EXPECT_THROW(bare->token_logits(TokenBatch::from_rows({{101, 7, 102}}, 0)), Error);
}

// A head the checkpoint lacks is made as transformers makes it, with its note, and counted.
TEST(Heads, NewHeadsOnAMaskedLmCheckpoint) {
  const int64_t C = 16, V = 120, all = expected_of("bert-mlm-f32")["parameters"].get<int64_t>();
  const int64_t body = all - (C * C + C + 2 * C + V);
  LoadOptions o;
  o.head = Head::token_classification;
  o.new_head_labels = 7;
  auto tok = load_model(heads_dir() + "bert-mlm-f32", o);
  EXPECT_EQ(tok->info().architecture, "BertForTokenClassification");
  EXPECT_EQ(tok->info().labels.size(), 7u);
  EXPECT_EQ(tok->info().parameters, body + 7 * C + 7);
  bool noted = false;
  for (const auto& n : tok->info().notes)
    noted |= n.find("Some weights of BertForTokenClassification were not initialized") != std::string::npos &&
             n.find("'classifier.weight'") != std::string::npos;
  EXPECT_TRUE(noted) << "transformers' note for the new head";
  bool dropped = false;  // and for the masked-LM head left out
  for (const auto& n : tok->info().notes)
    dropped |= n.find("Some weights of the model checkpoint at") != std::string::npos &&
               n.find("were not used when initializing BertForTokenClassification") != std::string::npos &&
               n.find("'cls.predictions.bias'") != std::string::npos;
  EXPECT_TRUE(dropped) << "transformers' note for the head left out";
  const Tensor logits = tok->token_logits(TokenBatch::from_rows({{101, 7, 19, 102}}, 0));
  EXPECT_EQ(logits.shape(), (Shape{1, 4, 7}));

  o.head = Head::sequence_classification;
  o.new_head_labels = 0;  // config.json's id2label (transformers' default 2)
  auto cls = load_model(heads_dir() + "bert-mlm-f32", o);
  EXPECT_TRUE(cls->info().classifier);
  EXPECT_EQ(cls->info().parameters, body + (C * C + C) + 2 * C + 2);  // a new pooler and classifier
  EXPECT_EQ(cls->classify(TokenBatch::from_rows({{101, 7, 102}}, 0)).shape(), (Shape{1, 2}));

  o.head = Head::question_answering;
  auto qa = load_model(heads_dir() + "distilbert-mlm-f32", o);
  EXPECT_EQ(qa->info().architecture, "DistilBertForQuestionAnswering");
  EXPECT_EQ(qa->token_logits(TokenBatch::from_rows({{101, 7, 102}}, 0)).shape(), (Shape{1, 3, 2}));
}

// A LoRA adapter for a token classifier (peft's TOKEN_CLS: modules_to_save ["classifier"]) keeps the
// token-classification head and replaces its classifier; BERT's sequence classifier has the same name.
TEST(Heads, TokenClassifierAdapterKeepsTheHead) {
  test::TempDir dir;
  test::write_text(dir.file("adapter_config.json"),
                   R"({"peft_type": "LORA", "task_type": "TOKEN_CLS", "r": 1, "lora_alpha": 1,
                       "target_modules": ["query"], "modules_to_save": ["classifier"],
                       "base_model_name_or_path": "bert-tokcls-f32"})");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string q = "base_model.model.bert.encoder.layer." + std::to_string(layer) + ".attention.self.query.";
    tensors.emplace_back(q + "lora_A.weight", Tensor::zeros({1, 16}, DType::f32));
    tensors.emplace_back(q + "lora_B.weight", Tensor::zeros({16, 1}, DType::f32));
  }
  Tensor bias = Tensor::empty({5}, DType::f32);
  for (int i = 0; i < 5; ++i) bias.data<float>()[i] = float(i + 1);
  tensors.emplace_back("base_model.model.classifier.weight", Tensor::zeros({5, 16}, DType::f32));
  tensors.emplace_back("base_model.model.classifier.bias", bias);
  model::write_safetensors(dir.file("adapter_model.safetensors"), tensors);
  LoadOptions o;
  o.adapter = dir.path();
  auto m = load_model(heads_dir() + "bert-tokcls-f32", o);
  EXPECT_EQ(m->info().head, Head::token_classification);
  const Tensor logits = m->token_logits(TokenBatch::from_rows({{101, 7, 19, 102}}, 0));
  ASSERT_EQ(logits.shape(), (Shape{1, 4, 5}));
  for (int64_t i = 0; i < logits.numel(); ++i) EXPECT_FLOAT_EQ(logits.data<float>()[i], float(i % 5 + 1));
}

// The heads in the CPU's other compute dtypes (bf16 GEMM inputs, int8 and NF4 linears, the tied
// decoder included): near the f32 logits, relative to their scale.
TEST(Heads, OtherComputeDtypesStayNearF32) {
  for (const char* name : {"bert-mlm-f32", "roberta-qa-f32", "modernbert-mlm-f32", "distilbert-tokcls-f32"}) {
    const json e = expected_of(name);
    const TokenBatch batch =
        TokenBatch::from_rows(e["input_rows"].get<std::vector<std::vector<int32_t>>>(), e["pad_id"].get<int32_t>());
    const Tensor ref = load_model(heads_dir() + name)->token_logits(batch);
    double scale = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) scale = std::max(scale, double(std::abs(ref.data<float>()[i])));
    for (const DType dt : {DType::bf16, DType::i8, DType::nf4}) {
      LoadOptions o;
      o.compute = dt;
      const Tensor got = load_model(heads_dir() + name, o)->token_logits(batch);
      ASSERT_EQ(got.shape(), ref.shape());
      double worst = 0;
      for (int64_t i = 0; i < ref.numel(); ++i)
        worst = std::max(worst, double(std::abs(got.data<float>()[i] - ref.data<float>()[i])));
      EXPECT_LT(worst / scale, dt == DType::bf16 ? 2e-2
                               : dt == DType::i8 ? 5e-2
                                                 : 0.3)
          << name << " " << dtype_name(dt);
    }
  }
}

// The same seed makes the same new head; another seed another.
TEST(Heads, NewHeadsAreSeeded) {
  LoadOptions o;
  o.head = Head::question_answering;
  o.seed = 3;
  const TokenBatch b = TokenBatch::from_rows({{101, 7, 19, 102}}, 0);
  const Tensor a = load_model(heads_dir() + "bert-mlm-f32", o)->token_logits(b);
  const Tensor a2 = load_model(heads_dir() + "bert-mlm-f32", o)->token_logits(b);
  o.seed = 4;
  const Tensor c = load_model(heads_dir() + "bert-mlm-f32", o)->token_logits(b);
  EXPECT_EQ(std::vector<float>(a.data<float>(), a.data<float>() + a.numel()),
            std::vector<float>(a2.data<float>(), a2.data<float>() + a2.numel()));
  EXPECT_NE(std::vector<float>(a.data<float>(), a.data<float>() + a.numel()),
            std::vector<float>(c.data<float>(), c.data<float>() + c.numel()));
}

// tach estimate names the architecture it counts: the family's for the head, on the checkpoint's body.
TEST(Heads, EstimateNamesTheArchitectureBuilt) {
  EstimateInput in;
  in.model = heads_dir() + "bert-mlm-f32";
  in.seq_len = 16;
  EXPECT_EQ(estimate_memory(in).architecture, "BertForMaskedLM");
  in.head = Head::question_answering;
  EXPECT_EQ(estimate_memory(in).architecture, "BertForQuestionAnswering: a new head on BertForMaskedLM's body");
  in.head = Head::none;
  EXPECT_EQ(estimate_memory(in).architecture, "BertModel: BertForMaskedLM's body");
}

// tach holds the tied decoder as a packed linear beside the embedding table: the estimate counts it.
TEST(Heads, EstimateCountsThePackedTiedDecoder) {
  auto packed_decoder = [](const std::string& name) {
    EstimateInput in;
    in.model = heads_dir() + name;
    in.seq_len = 16;
    for (const auto& line : estimate_memory(in).lines)
      if (line.name.find("masked-LM decoder") != std::string::npos) return line.bytes;
    return int64_t(0);
  };
  EXPECT_EQ(packed_decoder("bert-mlm-f32"), 120 * 16 * 4);  // V x C f32
  EXPECT_EQ(packed_decoder("bert-mlm-untied-f32"), 0);      // its own weight, counted with the parameters
  EXPECT_EQ(packed_decoder("bert-qa-f32"), 0);
}

// bench and profile time the head built: the masked LM's vocabulary logits.
TEST(Heads, MeasuredForwardRunsTheHead) {
  auto m = load_model(heads_dir() + "roberta-mlm-f32");
  const Tensor out = m->measured_forward(TokenBatch::from_rows({{0, 7, 19, 2}}, 1));
  EXPECT_EQ(out.shape(), (Shape{1, 4, 120}));
  const ForwardCost with_head = m->forward_cost(1, 4), body = m->hidden_states_cost(1, 4);
  // The decoder alone is 2 * T * V * C FLOPs.
  EXPECT_GE(with_head.flops - body.flops, 2.0 * 4 * 120 * 16);
}

}  // namespace
}  // namespace tach
