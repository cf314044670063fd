// tach prune --by importance: first-order head, neuron and layer importance from tach's own
// forward and backward, on every head tach trains for the encoders (sequence and token
// classifiers, question answering, the masked LM), against the same definition computed with
// gates in PyTorch on the transformers model (scripts/golden/make_prune_importance.py), and its
// bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "golden_check.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/prune.h"
#include "test_util.h"

namespace tach {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// f32 forward and backward against PyTorch's f32 autograd: within 1e-4 relative of the larger of
// the score and the largest score of its kind (a near-zero score is a difference of larger
// products, whose rounding is relative to them).
void expect_scores_near(const nlohmann::json& got, const nlohmann::json& want, double scale, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].is_array()) {
      expect_scores_near(got[i], want[i], scale, what + "[" + std::to_string(i) + "]");
      continue;
    }
    const double w = want[i].get<double>(), g = got[i].get<double>();
    EXPECT_NEAR(g, w, 1e-4 * std::max(std::fabs(w), scale)) << what << "[" << i << "]";
  }
}

double largest(const nlohmann::json& j) {
  if (!j.is_array()) return std::fabs(j.get<double>());
  double m = 0;
  for (const auto& x : j) m = std::max(m, largest(x));
  return m;
}

// fixture: a directory under tests/fixtures ("encoders/bert-...", "decoders/llama-...").
PruneOptions importance_options_at(const std::string& fixture, const std::string& output) {
  PruneOptions o;
  o.model = test::fixtures_dir() + "/" + fixture;
  o.output = output;
  o.by = "importance";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.tokenizer = test::fixtures_dir() + "/tokenizers/tiny-wordpiece";
  o.calibration_samples = 20;
  return o;
}

PruneOptions importance_options(const std::string& model, const std::string& output) {
  return importance_options_at("encoders/" + model, output);
}

// A decoder fixture pruned by importance with the options of its reference file (want), and the
// scores it wrote compared with the reference's: every group, neuron and layer within 1e-4 of the
// largest.
nlohmann::json prune_decoder_by_importance(const std::string& fixture, const std::string& output,
                                           const nlohmann::json& want) {
  PruneOptions o = importance_options_at("decoders/" + fixture, output);
  const nlohmann::json& opts = want["options"];
  o.heads = opts.value("heads", 0.0);
  o.ffn = opts.value("ffn", 0.0);
  o.layers = opts.value("layers", std::string());
  prune_model(o);
  const nlohmann::json scores = read_json(output + "/prune_scores.json");
  expect_scores_near(scores["heads"], want["head_importance"], largest(want["head_importance"]), "groups");
  expect_scores_near(scores["neurons"], want["neuron_importance"], largest(want["neuron_importance"]), "neurons");
  expect_scores_near(scores["layers"], want["layer_importance"], largest(want["layer_importance"]), "layers");
  EXPECT_EQ(scores["removed_layers"], want["removed_layers"]);
  return scores;
}

class ImportanceScores : public ::testing::TestWithParam<std::string> {};

// 20 examples of tiny.csv in batches of 8 (right-padded, the last batch 4 rows) against PyTorch
// one unpadded example at a time: the scores, the units --heads 0.5 --ffn 0.25 --layers 1 removes
// by them, and the pruned model's logits against transformers'.
TEST_P(ImportanceScores, MatchPyTorchAndPruneByThem) {
  const std::string family = GetParam();
  const nlohmann::json want = read_json(test::fixtures_dir() + "/prune/" + family + "-importance.json");
  test::TempDir tmp;
  PruneOptions o = importance_options(family + "-cls2-f32", tmp.file("pruned"));
  o.heads = 0.5;
  o.ffn = 0.25;
  o.layers = "1";
  const PruneResult r = prune_model(o);
  const nlohmann::json scores = read_json(o.output + "/prune_scores.json");
  EXPECT_EQ(scores["by"], "importance");
  expect_scores_near(scores["heads"], want["head_importance"], largest(want["head_importance"]), "heads");
  expect_scores_near(scores["neurons"], want["neuron_importance"], largest(want["neuron_importance"]), "neurons");
  expect_scores_near(scores["layers"], want["layer_importance"], largest(want["layer_importance"]), "layers");
  EXPECT_EQ(scores["calibration"]["samples"], want["samples"]);
  EXPECT_EQ(scores["calibration"]["dataset"], o.data.path);
  EXPECT_EQ(scores["calibration"]["loss"], "single_label_classification");
  EXPECT_EQ(scores["removed_layers"], want["removed_layers"]);
  EXPECT_EQ(read_json(o.output + "/config.json")["pruned_heads"], want["pruned_heads"]);
  EXPECT_EQ(r.removed_layers, 1);
  EXPECT_EQ(r.removed_heads, 2);
  EXPECT_EQ(r.removed_neurons, 10);
  std::filesystem::copy_file(test::fixtures_dir() + "/prune/" + family + "-importance.json",
                             o.output + "/expected.json");
  auto model = load_model(o.output);
  test::check_decoder_classifier_against_transformers(*model, o.output);
}

INSTANTIATE_TEST_SUITE_P(Families, ImportanceScores, ::testing::Values("bert", "distilbert"));

// A regression head (one output, MSE on the label as a number) on bf16 weights, which the
// training masters widen to f32 as the reference does: its scores alone.
TEST(ImportanceScores, RegressionHeadMatchesPyTorch) {
  const nlohmann::json want = read_json(test::fixtures_dir() + "/prune/bert-regression-importance.json");
  test::TempDir tmp;
  PruneOptions o = importance_options("bert-reg1-bf16", tmp.file("pruned"));
  o.ffn = 0.25;
  prune_model(o);
  const nlohmann::json scores = read_json(o.output + "/prune_scores.json");
  EXPECT_EQ(scores["calibration"]["loss"], "regression");
  expect_scores_near(scores["heads"], want["head_importance"], largest(want["head_importance"]), "heads");
  expect_scores_near(scores["neurons"], want["neuron_importance"], largest(want["neuron_importance"]), "neurons");
  expect_scores_near(scores["layers"], want["layer_importance"], largest(want["layer_importance"]), "layers");
}

// A per-token head's calibration: the model (tests/fixtures/train_tasks/<family>-<case>/model),
// its data as tach train --task reads it, and the tokenizer and lengths the reference used.
struct TaskCase {
  std::string head, model_case, data, tokenizer;
  int64_t max_length = 128, doc_stride = 0, samples = 128;
};

TaskCase task_case(const std::string& head) {
  if (head == "token-classification")
    return {head, "token-cls5-f32", "token_classes/ner.conll", "token_classes/tokenizer-wordpiece", 10, 0, 128};
  if (head == "question-answering")
    return {head, "qa-f32", "train_tasks/squad_train.jsonl", "question_answering/tokenizer-tiny", 24, 6, 128};
  return {head, "mlm-f32", "train/tiny.csv", "token_classes/tokenizer-wordpiece", 128, 0, 20};
}

class TaskImportance : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// The per-token heads, one row at a time as the reference: each scored by the loss tach train
// lowers for it (the masked LM on its first epoch's masks at seed 42), then --heads 0.5 --ffn 0.25
// --layers 1 removed by those scores and the pruned model's per-token outputs against
// transformers' on the model so pruned. RoBERTa, XLM-R and MPNet: one token type or none (a
// question's context reads type 0, as their own tokenizers give it), positions from the ids
// after padding_idx (pad id 1, inside a row too); MPNet's heads are scored but kept, as tach
// prune keeps them (one relative position bias table serves them all).
TEST_P(TaskImportance, MatchPyTorchAndPruneByThem) {
  const auto& [family, head] = GetParam();
  const TaskCase c = task_case(head);
  const std::string fx = test::fixtures_dir();
  const nlohmann::json want = read_json(fx + "/prune/" + family + "-" + head + "-importance.json");
  test::TempDir tmp;
  PruneOptions o;
  o.model = fx + "/train_tasks/" + family + "-" + c.model_case + "/model";
  o.output = tmp.file("pruned");
  o.by = "importance";
  o.data.path = fx + "/" + c.data;
  o.tokenizer = fx + "/" + c.tokenizer;
  o.max_length = c.max_length;
  o.doc_stride = c.doc_stride;
  o.calibration_samples = c.samples;
  const bool keeps_heads = family == "mpnet";
  o.heads = keeps_heads ? 0.0 : 0.5;
  o.ffn = 0.25;
  o.layers = "1";
  prune_model(o);
  const nlohmann::json scores = read_json(o.output + "/prune_scores.json");
  expect_scores_near(scores["heads"], want["head_importance"], largest(want["head_importance"]), "heads");
  expect_scores_near(scores["neurons"], want["neuron_importance"], largest(want["neuron_importance"]), "neurons");
  expect_scores_near(scores["layers"], want["layer_importance"], largest(want["layer_importance"]), "layers");
  const nlohmann::json& cal = scores["calibration"];
  EXPECT_EQ(cal["head"], head);
  EXPECT_EQ(cal["samples"], want["samples"]);
  EXPECT_EQ(cal["rows"], want["rows"]);
  if (head == "masked-lm") {
    EXPECT_EQ(cal["masking"]["seed"], 42);
    EXPECT_EQ(cal["masking"]["epoch"], 0);
  }
  if (head == "question-answering") { EXPECT_EQ(cal["doc_stride"], 6); }
  EXPECT_EQ(scores["removed_layers"], want["removed_layers"]);
  const nlohmann::json config = read_json(o.output + "/config.json");
  EXPECT_EQ(want.contains("pruned_heads"), !keeps_heads);
  if (keeps_heads) EXPECT_FALSE(config.contains("pruned_heads")) << config.dump();
  else EXPECT_EQ(config["pruned_heads"], want["pruned_heads"]);

  auto model = load_model(o.output);
  const auto rows = want["input_rows"].get<std::vector<std::vector<int32_t>>>();
  const Tensor got = model->token_logits(test::padded_batch(rows, want["pad_id"].get<int32_t>(), false));
  const auto expected = want["token_logits_right"].get<std::vector<std::vector<std::vector<float>>>>();
  const int64_t T = got.size(1), V = got.size(2);
  double worst = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t t = 0; t < rows[r].size(); ++t)  // padding's outputs are nobody's
      worst =
          std::max(worst, test::scaled_error(got.data<float>() + (int64_t(r) * T + int64_t(t)) * V, expected[r][t]));
  EXPECT_LT(worst, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Heads, TaskImportance,
                         ::testing::Combine(::testing::Values("bert", "distilbert", "roberta", "xlm-roberta", "mpnet"),
                                            ::testing::Values("token-classification", "question-answering",
                                                              "masked-lm")),
                         [](const auto& test_case) {
                           std::string n = std::get<0>(test_case.param) + "_" + std::get<1>(test_case.param);
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// A decoder sequence classifier (and ModernBERT's): a key/value group's gate on its query heads'
// contexts together, the model pruned by those scores (the reference's options) and its logits
// against transformers' on the pruned files.
class DecoderImportance : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderImportance, MatchPyTorchAndPruneByThem) {
  const std::string family = GetParam();
  const nlohmann::json want = read_json(test::fixtures_dir() + "/prune/" + family + "-importance.json");
  test::TempDir tmp;
  const std::map<std::string, std::string> sources = {
      {"llama", "llama-cls-bias-f32"}, {"mistral", "mistral-cls-window4-f32"},
      {"qwen2", "qwen2-cls-kv2-bf16"}, {"qwen3", "qwen3-cls-headdim16-f32"},
      {"gemma3", "gemma3-cls-f32"},    {"modernbert", "modernbert-cls-mean-f32"}};
  const std::string output = tmp.file("pruned");
  const nlohmann::json scores = prune_decoder_by_importance(sources.at(family), output, want);
  EXPECT_EQ(scores["calibration"]["samples"], 20);
  EXPECT_EQ(scores["calibration"]["head"], "sequence-classification");
  std::filesystem::copy_file(test::fixtures_dir() + "/prune/" + family + "-importance.json", output + "/expected.json");
  auto model = load_model(output);
  test::check_decoder_classifier_against_transformers(*model, output);
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderImportance,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma3", "modernbert"));

// A causal LM (…ForCausalLM): scored by its next-token loss, pruned by those scores, and the
// pruned model's LM logits against transformers' loading the pruned files (right-padded, real
// tokens).
class CausalLmImportance : public ::testing::TestWithParam<std::string> {};

TEST_P(CausalLmImportance, MatchPyTorchAndPruneByThem) {
  const std::string family = GetParam();
  const nlohmann::json want = read_json(test::fixtures_dir() + "/prune/" + family + "-causal-lm-importance.json");
  const std::map<std::string, std::string> sources = {{"llama", "llama-lm-llama3rope-f32"},
                                                      {"mistral", "mistral-lm-window4-f32"},
                                                      {"qwen2", "qwen2-lm-kv4-untied-f32"},
                                                      {"qwen3", "qwen3-lm-window-bf16"}};
  test::TempDir tmp;
  const std::string output = tmp.file("pruned");
  const nlohmann::json scores = prune_decoder_by_importance(sources.at(family), output, want);
  EXPECT_EQ(scores["calibration"]["head"], "causal-lm");
  EXPECT_EQ(scores["calibration"]["rows"], 20);

  auto model = load_model(output);
  const auto rows = want["lm_input_rows"].get<std::vector<std::vector<int32_t>>>();
  const Tensor got = model->lm_logits(test::padded_batch(rows, want["pad_id"].get<int32_t>(), false));
  const auto expected = want["lm_logits_right"].get<std::vector<std::vector<std::vector<float>>>>();
  const int64_t T = got.size(1), V = got.size(2);
  double worst = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t t = 0; t < rows[r].size(); ++t)
      worst =
          std::max(worst, test::scaled_error(got.data<float>() + (int64_t(r) * T + int64_t(t)) * V, expected[r][t]));
  EXPECT_LT(worst, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Families, CausalLmImportance, ::testing::Values("llama", "mistral", "qwen2", "qwen3"));

// The message of what prune_model(o) throws, and whether it was a usage error (exit status 2; the
// options), not an error in the input (exit status 1; the data, the model).
std::pair<std::string, bool> failure_of(const PruneOptions& o) {
  try {
    prune_model(o);
  } catch (const UsageError& e) { return {e.what(), true}; } catch (const Error& e) {
    return {e.what(), false};
  }
  return {"", false};
}

TEST(ImportanceScores, BadInputIsNamed) {
  test::TempDir tmp;
  const std::string out = tmp.file("bad");
  auto expect = [&](const PruneOptions& o, const std::string& text, bool usage) {
    const auto [message, was_usage] = failure_of(o);
    EXPECT_NE(message.find(text), std::string::npos) << message;
    EXPECT_EQ(was_usage, usage) << message;
    EXPECT_FALSE(std::filesystem::exists(out)) << text;
  };
  PruneOptions o = importance_options("bert-cls2-f32", out);
  o.data.path.clear();
  expect(o, "--by importance needs labelled calibration data: -d DATASET", true);
  o = importance_options("bert-cls2-f32", out);
  o.calibration_samples = 0;
  expect(o, "--calibration-samples 0: must be 1 or more", true);
  o = importance_options("bert-cls2-f32", out);
  o.data.label_column = "intent";
  expect(o, "has no label column 'intent' (its columns: text, label); name it with --label-column", false);
  o = importance_options("bert-cls2-f32", out);
  o.by = "magnitude";
  expect(o, "calibration data is for --by importance; --by magnitude reads none", true);
  o = importance_options("bert-cls2-f32", out);
  o.by = "gradient";
  expect(o, "--by gradient: not one of magnitude, importance", true);
  // A model without a sequence classifier: no loss to take.
  o = importance_options("bert-cls2-f32", out);
  o.model = test::fixtures_dir() + "/encoders/bert-base-model-f32";
  expect(o, "has none (config.json's architecture: BertModel): rank it --by magnitude", false);
  // (A head-pruned model is scored on the heads it has left: test_prune_pruned_importance.)
  // A causal LM whose family trains no token classifier (Gemma 3): its next-token loss is not built.
  o = importance_options("bert-cls2-f32", out);
  o.model = test::fixtures_dir() + "/decoders/gemma3-lm-softcap-f32";
  expect(
      o,
      "--by importance scores a causal LM through its family's token classifier, which tach does not train for Gemma 3",
      false);
  // Data the head does not read: named with the head, the file's kind and the model that reads it; an
  // input error (exit status 1), as every command's data errors.
  o = importance_options("bert-cls2-f32", out);
  o.model = test::fixtures_dir() + "/train_tasks/bert-token-cls5-f32/model";
  expect(o,
         "'s token-classification head on -d " + o.data.path +
             ", read as tach train --task token-classification reads it: ",
         false);
  expect(o, "which a sequence classifier reads: -m with a sequence-classification model", false);
  o.model = test::fixtures_dir() + "/train_tasks/bert-qa-f32/model";
  o.data.path = test::fixtures_dir() + "/token_classes/ner.conll";
  expect(o, "this file is CoNLL text, which a token classifier reads, not SQuAD-format data", false);
  o.model = test::fixtures_dir() + "/train_tasks/bert-mlm-f32/model";
  o.data.path = test::fixtures_dir() + "/train/tiny.csv";
  o.data.text_column = "sentence";
  expect(o, "sentence", false);
  // A question-answering window no wider than the stride between windows.
  o = importance_options("bert-cls2-f32", out);
  o.model = test::fixtures_dir() + "/train_tasks/bert-qa-f32/model";
  o.data.path = test::fixtures_dir() + "/train_tasks/squad_train.jsonl";
  o.tokenizer = test::fixtures_dir() + "/question_answering/tokenizer-tiny";
  o.max_length = 16;
  o.doc_stride = 16;
  expect(o, "--doc-stride 16 must be smaller than the windows, 16 tokens", true);
}

}  // namespace
}  // namespace tach
