// Training the per-token heads: masked-LM inputs as DataCollatorForLanguageModeling makes them,
// word labels aligned to sub-tokens as run_ner does, and question-answering windows and answer
// positions as run_qa's prepare_train_features makes them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/safetensors.h"
#include "test_util.h"
#include "train/grad_norm.h"
#include "train/head_loss.h"
#include "train/loss.h"
#include "train/lr_schedule.h"
#include "data/conll.h"
#include "data/squad.h"
#include "train/optimizer.h"
#include "train/qa_features.h"
#include "train/save_model.h"
#include "train/task_data.h"
#include "train/training_model.h"
#include "task_fixtures.h"
#include "train_fixtures.h"
#include "train/mlm_masking.h"
#include "train/token_labels.h"

namespace tach {
namespace {

train::MlmMasking bert_masking() {
  train::MlmMasking m;
  m.mask_token_id = 103;
  m.vocab_size = 1000;
  return m;
}

// Rows of 64 tokens, ids 200.., with [CLS] first, [SEP] at 50 and padding after it.
struct Row {
  std::vector<int32_t> ids, special, labels;
};
Row make_row() {
  Row r;
  for (int i = 0; i < 64; ++i) {
    const bool pad = i > 50;
    r.ids.push_back(i == 0 ? 101 : i == 50 ? 102 : pad ? 0 : 200 + i);
    r.special.push_back(i == 0 || i >= 50 ? 1 : 0);
  }
  r.labels.resize(r.ids.size());
  return r;
}

TEST(MlmMasking, FifteenPercentChosenThenEightyTenTen) {
  const train::MlmMasking m = bert_masking();
  int64_t candidates = 0, chosen = 0, masked = 0, kept = 0, random = 0;
  for (int64_t example = 0; example < 2000; ++example) {
    Row r = make_row();
    const Row original = r;
    chosen +=
        train::mask_tokens(r.ids.data(), r.labels.data(), r.special.data(), 64, m, train::mlm_mask_key(42, 0, example));
    for (size_t i = 0; i < r.ids.size(); ++i) {
      if (original.special[i]) {
        // Special tokens and padding are never chosen, and keep their ids.
        EXPECT_EQ(r.labels[i], train::kIgnoreIndex);
        EXPECT_EQ(r.ids[i], original.ids[i]);
        continue;
      }
      ++candidates;
      if (r.labels[i] == train::kIgnoreIndex) {
        EXPECT_EQ(r.ids[i], original.ids[i]) << "a token not chosen is left as it is";
        continue;
      }
      EXPECT_EQ(r.labels[i], original.ids[i]) << "a chosen token's label is its own id";
      if (r.ids[i] == 103) ++masked;
      else if (r.ids[i] == original.ids[i]) ++kept;
      else ++random;
    }
  }
  EXPECT_EQ(chosen, masked + kept + random);
  // 98,000 candidates: the 15% within 0.5 points; of ~14,700 chosen, 80/10/10 within 1.5 points.
  // (A random token can equal the original, 1 in 1000: counted as kept.)
  EXPECT_NEAR(double(chosen) / double(candidates), 0.15, 0.005);
  EXPECT_NEAR(double(masked) / double(chosen), 0.8, 0.015);
  EXPECT_NEAR(double(random) / double(chosen), 0.1, 0.015);
  EXPECT_NEAR(double(kept) / double(chosen), 0.1, 0.015);
}

TEST(MlmMasking, SeededPerExampleAndEpoch) {
  const train::MlmMasking m = bert_masking();
  auto masks = [&](uint64_t seed, int64_t epoch, int64_t example) {
    Row r = make_row();
    train::mask_tokens(r.ids.data(), r.labels.data(), r.special.data(), 64, m,
                       train::mlm_mask_key(seed, epoch, example));
    return r.ids;
  };
  EXPECT_EQ(masks(42, 0, 3), masks(42, 0, 3));
  EXPECT_NE(masks(42, 0, 3), masks(42, 1, 3)) << "a new epoch re-masks (dynamic masking)";
  EXPECT_NE(masks(42, 0, 3), masks(42, 0, 4));
  EXPECT_NE(masks(42, 0, 3), masks(43, 0, 3));
}

TEST(MlmMasking, ProbabilityIsHonoured) {
  train::MlmMasking m = bert_masking();
  m.probability = 0.4;
  int64_t chosen = 0, candidates = 0;
  for (int64_t example = 0; example < 500; ++example) {
    Row r = make_row();
    chosen +=
        train::mask_tokens(r.ids.data(), r.labels.data(), r.special.data(), 64, m, train::mlm_mask_key(7, 0, example));
    candidates += 49;
  }
  EXPECT_NEAR(double(chosen) / double(candidates), 0.4, 0.02);
}

TEST(MlmMasking, BadSettingsAreNamed) {
  train::MlmMasking m = bert_masking();
  m.probability = 1.5;
  EXPECT_THROW(
      {
        try {
          train::validate_mlm_masking(m);
        } catch (const std::exception& e) {
          EXPECT_NE(std::string(e.what()).find("--mlm-probability"), std::string::npos) << e.what();
          throw;
        }
      },
      std::exception);
  m = bert_masking();
  m.mask_token_id = -1;
  EXPECT_THROW(train::validate_mlm_masking(m), std::exception);
}

// run_ner.py's tokenize_and_align_labels on word ids as the tokenizer reports them.
TEST(TokenLabels, FirstSubTokenCarriesTheLabel) {
  const std::vector<std::string> labels = {"B-LOC", "B-PER", "I-LOC", "I-PER", "O"};
  const auto b_to_i = train::b_to_i_labels(labels);
  EXPECT_EQ(b_to_i, (std::vector<int32_t>{2, 3, 2, 3, 4}));
  // [CLS] Johann(2 pieces) lives in Köln(3 pieces) [SEP]
  const std::vector<int32_t> word_ids = {-1, 0, 0, 1, 2, 3, 3, 3, -1};
  const std::vector<int32_t> word_labels = {1, 4, 4, 0};  // B-PER O O B-LOC
  EXPECT_EQ(train::align_word_labels(word_ids, word_labels, false, b_to_i),
            (std::vector<int32_t>{-100, 1, -100, 4, 4, 0, -100, -100, -100}));
  EXPECT_EQ(train::align_word_labels(word_ids, word_labels, true, b_to_i),
            (std::vector<int32_t>{-100, 1, 3, 4, 4, 0, 2, 2, -100}));
}

TEST(TokenLabels, BWithoutItsIKeepsItsOwnId) {
  const auto b_to_i = train::b_to_i_labels({"B-MISC", "O"});
  EXPECT_EQ(b_to_i, (std::vector<int32_t>{0, 1}));
  EXPECT_THROW(train::align_word_labels({-1, 0, 1, -1}, {1}, false, b_to_i), std::exception);
}

nlohmann::json features_golden() {
  std::ifstream in(test::fixtures_dir() + "/train_tasks/features.json");
  return nlohmann::json::parse(in);
}

std::vector<std::vector<int32_t>> int_rows(const nlohmann::json& j) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& row : j) out.push_back(row.get<std::vector<int32_t>>());
  return out;
}

// Words to sub-tokens and tags to their labels as run_ner.py does, on the CoNLL fixture (cut to
// 10 tokens): the same ids and labels as transformers' tokenizer with is_split_into_words=True.
TEST(TokenLabels, TaggedSentencesAsRunNer) {
  const nlohmann::json g = features_golden()["ner"];
  const auto tokenizer = Tokenizer::load(test::fixtures_dir() + "/token_classes/tokenizer-wordpiece");
  const std::string path = test::fixtures_dir() + "/token_classes/ner.conll";
  const auto sentences = data::read_tagged_file(path, "auto", -1, {});
  const auto labels = train::tag_labels(sentences);
  EXPECT_EQ(labels, g["label_names"].get<std::vector<std::string>>());
  for (const bool all : {false, true}) {
    const train::TrainData d = train::prepare_token_data(sentences, path, *tokenizer, false, labels, all,
                                                         g["max_length"].get<int64_t>(), false, 0, true);
    EXPECT_EQ(d.ids, int_rows(g["input_ids"]));
    EXPECT_EQ(d.token_labels, int_rows(g[all ? "labels_all_tokens" : "labels"])) << "label_all_tokens " << all;
  }
}

// Training splits words as transformers' is_split_into_words=True does, with or without the
// prefix space (WordPiece, byte-level BPE both ways, Unigram, MPNet; words of spaces and symbols):
// the same ids as tach eval's token classifier reads.
TEST(TokenLabels, WordsSplitAsTransformersWithAndWithoutThePrefixSpace) {
  const nlohmann::json golden =
      nlohmann::json::parse(test::read_text(test::fixtures_dir() + "/token_classes/split_words.json"));
  int compared = 0;
  for (const nlohmann::json& c : golden["cases"]) {
    const auto tokenizer = Tokenizer::load(test::fixtures_dir() + "/" + c["tokenizer"].get<std::string>());
    data::TaggedSentence s;
    s.words = c["words"].get<std::vector<std::string>>();
    s.tags.assign(s.words.size(), "O");
    const bool prefix_space = c["add_prefix_space"].get<bool>();
    const int64_t max_length = c["max_length"].get<int64_t>();  // 0: no limit, as training never runs
    const train::TrainData d = train::prepare_token_data({s}, "words", *tokenizer, prefix_space, {"O"}, false,
                                                         max_length > 0 ? max_length : 512, false, 0, false);
    EXPECT_EQ(d.ids.at(0), c["ids"].get<std::vector<int32_t>>())
        << c["tokenizer"] << (prefix_space ? " (prefix space) " : " ") << c["words"].dump();
    ++compared;
  }
  EXPECT_GE(compared, 40);
}

// run_qa.py's prepare_train_features on a few SQuAD questions (an answer at the context's start,
// one past a window, none, a question with leading spaces, a context with accents): the same
// windows and start/end positions.
TEST(QaFeatures, WindowsAndPositionsAsRunQa) {
  const nlohmann::json g = features_golden()["qa"];
  const auto tokenizer = Tokenizer::load(test::fixtures_dir() + "/question_answering/tokenizer-tiny");
  const data::SquadData squad = data::read_squad(test::fixtures_dir() + "/train_tasks/squad_train.jsonl");
  const train::TrainData d = train::prepare_qa_data(squad.questions, *tokenizer, g["max_length"].get<int64_t>(),
                                                    g["doc_stride"].get<int64_t>(), false, 0, true);
  EXPECT_EQ(d.ids, int_rows(g["input_ids"]));
  EXPECT_EQ(d.types, int_rows(g["token_type_ids"]));
  EXPECT_EQ(d.start_positions, g["start_positions"].get<std::vector<int32_t>>());
  EXPECT_EQ(d.end_positions, g["end_positions"].get<std::vector<int32_t>>());
}

TEST(QaFeatures, AnswerBytesCountCharactersAsPython) {
  // "Café" is 4 characters and 5 bytes: an answer after it starts 1 byte later than its character.
  const auto b = train::answer_bytes("Café owners", 5, "owners");
  EXPECT_EQ(b.first, 6u);
  EXPECT_EQ(b.second, 12u);
}

// Bad input is named: a tag the head does not have, a question that leaves the context no room,
// a per-token task on a decoder.
TEST(TaskData, BadInputIsNamed) {
  const auto tokenizer = Tokenizer::load(test::fixtures_dir() + "/token_classes/tokenizer-wordpiece");
  data::TaggedSentence s;
  s.words = {"john", "lives"};
  s.tags = {"B-PER", "B-MISC"};
  s.source = 7;
  try {
    train::prepare_token_data({s}, "ner.conll", *tokenizer, false, {"B-PER", "O"}, false, 16, false, 0, true);
    ADD_FAILURE() << "an unknown tag was taken";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("tag \"B-MISC\" is not one of the head's labels (B-PER, O)"),
              std::string::npos)
        << e.what();
  }
  data::SquadQuestion q;
  q.question = "where is the amazon river basin in south america and brazil and peru";
  q.context = "the amazon river basin is in south america";
  q.answers = {"south america"};
  q.answer_starts = {29};
  q.where = "record 3";
  const auto qa_tokenizer = Tokenizer::load(test::fixtures_dir() + "/question_answering/tokenizer-tiny");
  try {
    train::prepare_qa_data({q}, *qa_tokenizer, 12, 4, false, 0, true);
    ADD_FAILURE() << "a question longer than the window was taken";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("record 3: the question is longer than the window"), std::string::npos)
        << e.what();
  }
  const train::TrainingModelSource decoder = train::open_training_model("preset:qwen2-tiny", 0);
  EXPECT_THROW(train::build_trainable_model(decoder, {}, "", 0, nullptr, Head::masked_lm), std::exception);
}

// A task model saved by transformers, its four batches with their labels, and transformers'
// gradients and 20 steps (scripts/golden/make_train_task_golden.py): tests/task_fixtures.h.
using test::load_task_case;
using test::task_forward_backward;
using test::TaskCase;

// Gradients that are zero in exact arithmetic, so rounding noise in both engines, which AdamW
// then walks by ~lr per step in a direction rounding sets (test_train_golden says more):
// - the key projection's bias (softmax ignores a shift shared by a row's scores);
// - question answering's qa_outputs.bias (ModernBERT's classifier.bias) and the last layer's
//   output LayerNorm bias: each is a sum over a row's tokens of the start/end logits' gradient,
//   and a softmax over the row's tokens has gradients that sum to zero.
bool zero_in_exact_arithmetic(const std::string& name, Head head) {
  for (const char* k : {"attention.self.key.bias", "attention.k_lin.bias", "attention.attn.k.bias"})
    if (name.find(k) != std::string::npos) return true;
  if (head != Head::question_answering) return false;
  return name == "qa_outputs.bias" || name == "classifier.bias" ||
         name.find("layer.1.output.LayerNorm.bias") != std::string::npos ||
         name.find("layer.1.output_layer_norm.bias") != std::string::npos;
}

// transformers names a tied tensor once, by whichever module registered it first: XLM-RoBERTa's
// masked LM lists the word embeddings as lm_head.decoder.weight; tach as the embeddings.
const train::Parameter* find_param(const train::TrainableModel& m, const std::string& name) {
  if (const train::Parameter* p = m.params.find(name)) return p;
  if (name != "lm_head.decoder.weight") return nullptr;
  for (const auto& p : m.params.entries())
    if (p.name.size() > 33 && p.name.substr(p.name.size() - 33) == "embeddings.word_embeddings.weight") return &p;
  return nullptr;
}

class TaskFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TaskFixture, EveryGradientMatchesTransformers) {
  for (const bool fused : {false, true}) {
    TaskCase c = load_task_case(GetParam());
    const auto state = c.model->new_state(fused);
    c.model->params.zero_grad();
    const double loss = task_forward_backward(c, *state, 0);
    EXPECT_NEAR(loss, c.expected["loss0"].get<double>(), 1e-5 * std::max(1.0, std::fabs(loss)));
    const auto ref = model::SafetensorsFile::open(c.dir + "/grads.safetensors");
    size_t checked = 0;
    for (const auto& e : ref.header().entries) {
      const train::Parameter* p = find_param(*c.model, e.name);
      ASSERT_NE(p, nullptr) << "tach has no parameter " << e.name;
      ASSERT_EQ(p->grad.shape(), e.shape) << e.name;
      if (zero_in_exact_arithmetic(e.name, c.model->head())) {
        double largest = 0;
        for (int64_t i = 0; i < p->grad.numel(); ++i)
          largest = std::max(largest, double(std::fabs(p->grad.data<float>()[i])));
        EXPECT_LT(largest, 1e-6) << e.name << " should be rounding noise";
      } else {
        EXPECT_LT(test::tensor_error(p->grad, ref.tensor(e)), 1e-4) << e.name << (fused ? " (fused)" : "");
      }
      ++checked;
    }
    EXPECT_EQ(checked, c.model->params.entries().size()) << "every parameter has a reference gradient";
  }
}

TEST_P(TaskFixture, TwentyAdamWStepsMatchTransformers) {
  TaskCase c = load_task_case(GetParam());
  const nlohmann::json& x = c.expected;
  train::AdamWConfig config;
  config.weight_decay = x["weight_decay"].get<float>();
  train::AdamWOptimizer opt(c.model->params, config, train::DecayScope::trainer);
  train::LinearSchedule schedule{x["lr"].get<double>(), x["warmup"].get<int64_t>(), x["steps"].get<int64_t>(), true};
  const auto state = c.model->new_state(false);
  for (int64_t step = 0; step < x["steps"].get<int64_t>(); ++step) {
    c.model->params.zero_grad();
    const double loss = task_forward_backward(c, *state, size_t(step % 4));
    std::vector<Tensor> grads;
    for (auto& p : c.model->params.entries()) grads.push_back(p.grad);
    const double norm = train::clip_grad_norm(grads, x["clip"].get<double>());
    EXPECT_NEAR(norm, x["grad_norms"][size_t(step)].get<double>(), 1e-4 * x["grad_norms"][size_t(step)].get<double>())
        << "step " << step;
    opt.step(schedule.lr(step));
    const double want = x["losses"][size_t(step)].get<double>();
    EXPECT_NEAR(loss, want, 1e-4 * std::max(1.0, std::fabs(want))) << "step " << step;
  }
  const auto ref = model::SafetensorsFile::open(c.dir + "/final.safetensors");
  for (const auto& e : ref.header().entries) {
    const train::Parameter* p = find_param(*c.model, e.name);
    ASSERT_NE(p, nullptr) << e.name;
    if (zero_in_exact_arithmetic(e.name, c.model->head())) continue;
    if (e.name.find("self_attn.k_proj.bias") != std::string::npos) {
      // A RoPE decoder's key bias: its low-frequency components' gradient is nearly zero, so AdamW
      // walks them by rounding (test_train_golden says more); it starts at zero, so the check is
      // absolute.
      const Tensor want = ref.tensor(e).to(DType::f32);
      double largest = 0;
      for (int64_t i = 0; i < want.numel(); ++i)
        largest = std::max(largest, double(std::fabs(p->value.data<float>()[i] - want.data<float>()[i])));
      EXPECT_LT(largest, 1e-4) << e.name;
      continue;
    }
    EXPECT_LT(test::tensor_error(p->value, ref.tensor(e)), 1e-4) << e.name;
  }
}

// With dropout on (the head's too), eager and fused draw the same masks, and gradient
// checkpointing recomputes the same layers: their gradients agree with plain eager to rounding.
TEST_P(TaskFixture, FusedAndCheckpointedEqualEagerWithDropout) {
  train::DropoutRates on{0.2f, 0.2f, 0.2f, 0.f, 99, 3};
  on.head = 0.2f;
  std::vector<TaskCase> cases;
  for (int i = 0; i < 3; ++i) cases.push_back(load_task_case(GetParam()));
  for (size_t i = 0; i < cases.size(); ++i) {
    TaskCase& c = cases[i];
    const auto state = c.model->new_state(i == 1);
    state->checkpoint = i == 2;
    c.model->params.zero_grad();
    c.model->forward(*state, c.batches[1], on);
    const TokenBatch& b = c.batches[1];
    const Tensor dlogits = Tensor::zeros(state->logits.shape(), DType::f32, c.model->device);
    train::head_loss(c.model->head(), "", state->logits,
                     train::loss_targets(c.targets[1], c.model->head(), b.seq_len(), c.model->device), dlogits, 1.f);
    c.model->backward(*state, b, dlogits.data<float>(), on);
  }
  for (auto& p : cases[0].model->params.entries()) {
    if (zero_in_exact_arithmetic(p.name, cases[0].model->head())) continue;
    EXPECT_LT(test::tensor_error(cases[1].model->params.at(p.name).grad, p.grad), 1e-5) << p.name << " (fused)";
    EXPECT_LT(test::tensor_error(cases[2].model->params.at(p.name).grad, p.grad), 1e-6) << p.name << " (checkpointed)";
  }
}

// What the caller sets before a forward outlives the first forward and a change of batch
// length (the activations re-sized): the masked LM's head runs on the chosen tokens alone
// (logits [chosen, V], not [B * T, V]) and the data-parallel hook stays set.
TEST_P(TaskFixture, ThePredictedRowsAndTheHookOutliveANewBatchLength) {
  TaskCase c = load_task_case(GetParam());
  const auto state = c.model->new_state(false);
  const train::DropoutRates off;
  for (const size_t i : {size_t(0), size_t(1)}) {
    TokenBatch batch = c.batches[i];
    if (i == 1) {  // one token shorter: the activations are sized afresh
      const int64_t B = batch.batch(), T = batch.seq_len() - 1;
      TokenBatch shorter;
      shorter.input_ids = Tensor::empty({B, T}, DType::i32);
      shorter.attention_mask = Tensor::empty({B, T}, DType::i32);
      if (batch.token_type_ids.defined()) shorter.token_type_ids = Tensor::zeros({B, T}, DType::i32);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
          shorter.input_ids.data<int32_t>()[b * T + t] = batch.input_ids.data<int32_t>()[b * (T + 1) + t];
          shorter.attention_mask.data<int32_t>()[b * T + t] = batch.attention_mask.data<int32_t>()[b * (T + 1) + t];
        }
      batch = shorter;
    }
    int hook_calls = 0;
    state->layer_grads_ready = [&hook_calls](int) { ++hook_calls; };
    const int64_t N = batch.batch() * batch.seq_len();
    std::vector<int32_t> chosen;
    if (c.model->head() == Head::masked_lm) {
      chosen = {0, int32_t(N / 2), int32_t(N - 1)};
      state->predicted_rows = chosen;
    }
    c.model->forward(*state, batch, off);
    EXPECT_TRUE(bool(state->layer_grads_ready)) << "batch " << i;
    const int64_t rows = c.model->head() == Head::masked_lm ? int64_t(chosen.size()) : N;
    EXPECT_EQ(state->logits.shape()[0], rows) << "batch " << i;
    EXPECT_EQ(state->predicted_rows, chosen) << "batch " << i;
    std::vector<float> dlogits(size_t(state->logits.numel()), 0.01f);
    c.model->backward(*state, batch, dlogits.data(), off);
    EXPECT_GT(hook_calls, 0) << "batch " << i << ": the backward calls the hook as layers finish";
  }
}

// A checkpoint's head is its task's: a token classifier's "classifier" is not taken as a sequence
// classifier's (a new one is made, with transformers' note), and a masked LM's head is left out.
TEST(TaskHeads, AnotherTasksHeadIsNotLoaded) {
  const std::string dir = test::fixtures_dir() + "/train_tasks/bert-token-cls5-f32/model";
  const train::TrainingModelSource source = train::open_training_model(dir, 0);
  EXPECT_TRUE(source.has_head(Head::token_classification));
  EXPECT_FALSE(source.checkpoint_has_head) << "no sequence classifier in a token classifier";
  std::vector<std::string> notes;
  const auto model = train::build_trainable_model(source, {"LABEL_0", "LABEL_1"}, "single_label_classification", 0,
                                                  &notes, Head::sequence_classification);
  EXPECT_EQ(model->architecture(), "BertForSequenceClassification");
  bool noted = false;
  for (const auto& n : notes)
    noted = noted || (n.find("Some weights of BertForSequenceClassification were not initialized") == 0 &&
                      n.find("classifier") != std::string::npos);
  EXPECT_TRUE(noted) << "transformers' note names the new classifier";
  const auto ref = model::SafetensorsFile::open(dir + "/model.safetensors");
  for (const auto& e : ref.header().entries)
    if (e.name == "classifier.weight") { EXPECT_NE(e.shape, model->params.at("classifier.weight").value.shape()); }
}

// ModernBERT's token classifier made on its masked LM: the checkpoint's head block (head.dense,
// head.norm) is taken, as from_pretrained takes it; the classifier is new, with the note; the
// decoder's bias is left out.
TEST(TaskHeads, ModernBertTokenClassifierOnAMaskedLmTakesItsHeadBlock) {
  const std::string dir = test::fixtures_dir() + "/train_tasks/modernbert-mlm-f32/model";
  const train::TrainingModelSource source = train::open_training_model(dir, 0);
  EXPECT_TRUE(source.has_head(Head::masked_lm));
  EXPECT_FALSE(source.checkpoint_has_head) << "a masked LM's head is no sequence classifier";
  std::vector<std::string> notes;
  const auto model = train::build_trainable_model(source, {"B-LOC", "O"}, "", 0, &notes, Head::token_classification);
  EXPECT_EQ(model->architecture(), "ModernBertForTokenClassification");
  EXPECT_EQ(model->params.at("classifier.weight").value.shape(), (Shape{2, 32}));
  EXPECT_EQ(model->params.find("decoder.bias"), nullptr);
  const auto ref = model::SafetensorsFile::open(dir + "/model.safetensors");
  for (const auto& e : ref.header().entries)
    if (e.name == "head.dense.weight" || e.name == "head.norm.weight") {
      EXPECT_LT(test::tensor_error(model->params.at(e.name).value, ref.tensor(e)), 1e-7) << e.name;
    }
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  EXPECT_NE(all.find("classifier.weight, classifier.bias"), std::string::npos) << all;
  EXPECT_EQ(all.find("head.dense.weight,"), std::string::npos) << all;
}

// Question answering made on a token classifier of 5 labels saves transformers' two default
// labels: …ForQuestionAnswering sizes its start/end head by num_labels (ModernBERT's classifier,
// BERT's qa_outputs), so the token classifier's would not load.
TEST(TaskHeads, QuestionAnsweringOnATokenClassifierSavesTwoLabels) {
  for (const char* name : {"bert-token-cls5-f32", "modernbert-token-cls5-f32"}) {
    const std::string dir = test::fixtures_dir() + "/train_tasks/" + name + "/model";
    const train::TrainingModelSource source = train::open_training_model(dir, 0);
    const auto model = train::build_trainable_model(source, {}, "", 0, nullptr, Head::question_answering);
    const nlohmann::json config = train::trained_config(*model, source.config_json, "");
    EXPECT_EQ(config["id2label"].size(), 2u) << name << ": " << config["id2label"].dump();
    EXPECT_EQ(config["label2id"].size(), 2u) << name;
    EXPECT_EQ(config["architectures"][0].get<std::string>().find("ForQuestionAnswering") == std::string::npos, false);
  }
}

// A causal decoder trains as a sequence classifier: a per-token task is refused naming that.
// A causal decoder has no masked LM; Gemma 3's row has no per-token heads: each refusal names
// the tasks the family trains.
TEST(TaskHeads, ACausalDecoderRefusesWhatItsRowLacksNamingWhatItTrains) {
  const train::TrainingModelSource qwen2 = train::open_training_model("preset:qwen2-tiny", 0);
  try {
    train::build_trainable_model(qwen2, {}, "", 0, nullptr, Head::masked_lm);
    ADD_FAILURE() << "a masked LM trained on a causal decoder";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("are causal language models with no masked-LM head; --task sequence-classification, "
                        "token-classification, question-answering train them"),
              std::string::npos)
        << what;
  }
  const train::TrainingModelSource gemma =
      train::open_training_model(test::fixtures_dir() + "/decoders/gemma3-cls-f32", 0);
  for (const Head task : {Head::token_classification, Head::question_answering}) {
    try {
      train::build_trainable_model(gemma, {"A", "B"}, "", 0, nullptr, task);
      ADD_FAILURE() << head_name(task) << " trained on Gemma 3";
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("training the ") + head_name(task) + " head of Gemma"), std::string::npos)
          << what;
      EXPECT_NE(what.find("is not built; --task sequence-classification trains them"), std::string::npos) << what;
    }
  }
}

// The causal decoders' per-token heads: `score` on every token, and qa_outputs with the body
// under the family's question-answering prefix (Qwen2's "transformer."), as transformers saves them.
TEST(TaskHeads, CausalDecodersBuildTheirPerTokenHeads) {
  const train::TrainingModelSource qwen2 = train::open_training_model("preset:qwen2-tiny", 0);
  const auto tokens = train::build_trainable_model(qwen2, {"A", "B", "C"}, "", 0, nullptr, Head::token_classification);
  EXPECT_EQ(tokens->architecture(), "Qwen2ForTokenClassification");
  EXPECT_EQ(tokens->params.at("score.weight").value.shape()[0], 3);
  EXPECT_NE(tokens->params.find("score.bias"), nullptr);
  EXPECT_NE(tokens->params.find("model.embed_tokens.weight"), nullptr);
  const auto qa = train::build_trainable_model(qwen2, {}, "", 0, nullptr, Head::question_answering);
  EXPECT_EQ(qa->architecture(), "Qwen2ForQuestionAnswering");
  EXPECT_EQ(qa->labels(), (std::vector<std::string>{"start", "end"}));
  EXPECT_EQ(qa->params.at("qa_outputs.weight").value.shape()[0], 2);
  EXPECT_NE(qa->params.find("transformer.embed_tokens.weight"), nullptr);
  EXPECT_EQ(qa->params.find("model.embed_tokens.weight"), nullptr);
}

// …ForTokenClassification's dropout before `score`: classifier_dropout, else hidden_dropout, else
// 0.1; it drops out the head's input in training (the logits change) and nothing else.
TEST(TaskHeads, ACausalTokenClassifierAppliesItsConfiguredDropout) {
  const train::TrainingModelSource preset = train::open_training_model("preset:qwen2-tiny", 0);
  EXPECT_FLOAT_EQ(preset.dropout(Head::token_classification).head, 0.1f) << "transformers' default";
  EXPECT_FLOAT_EQ(preset.dropout(Head::question_answering).head, 0.f) << "qa_outputs reads h itself";
  const train::TrainingModelSource fixture =
      train::open_training_model(test::fixtures_dir() + "/train_tasks/llama-token-cls5-f32/model", 0);
  EXPECT_FLOAT_EQ(fixture.dropout(Head::token_classification).head, 0.f) << "the config's classifier_dropout 0.0";

  TaskCase c = load_task_case("llama-token-cls5-f32");
  const auto state = c.model->new_state(false);
  train::DropoutRates off, on;
  on.head = 0.5f, on.seed = 3;
  c.model->forward(*state, c.batches[0], off);
  const Tensor plain = state->logits.to(DType::f32);  // a copy
  c.model->forward(*state, c.batches[0], on);
  EXPECT_GT(test::tensor_error(state->logits, plain), 1e-2) << "the head's input was dropped out";
  on.head = 0.f;
  c.model->forward(*state, c.batches[0], on);
  EXPECT_LT(test::tensor_error(state->logits, plain), 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TaskFixture,
                         ::testing::Values("bert-mlm-f32", "distilbert-mlm-f32", "roberta-mlm-f32",
                                           "bert-token-cls5-f32", "distilbert-token-cls5-f32", "bert-qa-f32",
                                           "roberta-qa-f32", "mpnet-mlm-f32", "xlm-roberta-token-cls5-f32",
                                           "mpnet-qa-f32", "xlm-roberta-mlm-f32", "distilbert-qa-f32",
                                           "modernbert-mlm-f32", "modernbert-token-cls5-f32", "modernbert-qa-f32",
                                           "llama-token-cls5-f32", "llama-qa-f32", "mistral-token-cls5-f32",
                                           "mistral-qa-f32", "qwen2-qa-f32", "qwen3-token-cls5-f32",
                                           "roberta-token-cls5-f32", "mpnet-token-cls5-f32", "xlm-roberta-qa-f32",
                                           "qwen2-token-cls5-f32", "qwen3-qa-f32"),
                         [](const auto& param_info) { return test::param_name(param_info.param); });

}  // namespace
}  // namespace tach
