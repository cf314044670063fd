// Extractive question answering against transformers' question-answering pipeline, and the SQuAD
// scores against the official scripts (fixtures: scripts/golden/make_qa_golden.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/dataset_kind.h"
#include "data/squad.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/question_answering.h"
#include "tach/tokenizer.h"
#include "tasks/answer_question.h"
#include "tasks/answer_spans.h"
#include "tasks/squad_metric.h"
#include "test_util.h"

namespace tach {
namespace {

using nlohmann::json;

std::string qa_dir() { return test::fixtures_dir() + "/question_answering"; }

json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f);
}

// The pipeline's keyword arguments as tach's options (the pipeline's defaults where absent:
// max_seq_len min(model_max_length, 384), doc_stride min(max_seq_len / 2, 128)).
tasks::AnswerOptions options_of(const json& o) {
  tasks::AnswerOptions a;
  a.max_length = o.value("max_seq_len", 384);
  a.doc_stride = o.value("doc_stride", std::min<int64_t>(a.max_length / 2, 128));
  a.top_k = o.value("top_k", 1);
  a.max_answer_len = o.value("max_answer_len", 15);
  a.handle_impossible_answer = o.value("handle_impossible_answer", false);
  return a;
}

void expect_answers(const std::vector<tasks::Answer>& got, const json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(what + ", answer " + std::to_string(i));
    EXPECT_EQ(got[i].text, want[i]["answer"].get<std::string>());
    EXPECT_EQ(got[i].start, want[i]["start"].get<int64_t>());
    EXPECT_EQ(got[i].end, want[i]["end"].get<int64_t>());
    EXPECT_NEAR(got[i].score, want[i]["score"].get<double>(), 1e-4);
  }
}

TEST(AnswerSpans, WindowsAreThePipelinesWithWordAndSequenceIds) {
  for (const auto& c : read_json(qa_dir() + "/spans.json")) {
    const std::string what = c["tokenizer"].get<std::string>() + ": " + c["question"].get<std::string>();
    auto tok = Tokenizer::load(test::fixtures_dir() + "/tokenizers/" + c["tokenizer"].get<std::string>());
    const auto windows =
        tasks::answer_windows(*tok, c["question"], c["context"], options_of(c["options"]), tasks::cls_token_id(*tok));
    ASSERT_EQ(windows.size(), c["windows"].size()) << what;
    for (size_t w = 0; w < windows.size(); ++w) {
      SCOPED_TRACE(what + ", window " + std::to_string(w));
      const json& want = c["windows"][w];
      const Encoding& e = windows[w].encoding;
      EXPECT_EQ(e.ids, want["ids"].get<std::vector<int32_t>>());
      EXPECT_EQ(e.type_ids, want["type_ids"].get<std::vector<int32_t>>());
      EXPECT_EQ(e.word_ids, want["word_ids"].get<std::vector<int32_t>>());
      EXPECT_EQ(e.sequence_ids, want["sequence_ids"].get<std::vector<int32_t>>());
      std::vector<uint8_t> candidate;
      for (int p : want["p_mask"]) candidate.push_back(p ? 0 : 1);
      EXPECT_EQ(windows[w].candidate, candidate);
    }
  }
}

TEST(AnswerSpans, AnswersAreThePipelinesForTheSameLogits) {
  for (const auto& c : read_json(qa_dir() + "/spans.json")) {
    const std::string what = c["tokenizer"].get<std::string>() + ": " + c["question"].get<std::string>();
    auto tok = Tokenizer::load(test::fixtures_dir() + "/tokenizers/" + c["tokenizer"].get<std::string>());
    const tasks::AnswerOptions options = options_of(c["options"]);
    const auto windows = tasks::answer_windows(*tok, c["question"], c["context"], options, tasks::cls_token_id(*tok));
    std::vector<std::vector<float>> starts, ends;
    for (const auto& w : c["windows"]) {
      starts.push_back(w["start_logits"].get<std::vector<float>>());
      ends.push_back(w["end_logits"].get<std::vector<float>>());
    }
    expect_answers(tasks::answers_from_logits(windows, starts, ends, c["context"], options), c["answers"], what);
  }
}

// "We saw emoji here. Paris is big.": the pipeline answers "We saw emoji", whose three spans (one
// per word piece of "emoji", widened to the whole word) add their scores past the best single span,
// "We saw emoji here." (which tach gave before it decoded 2k + 10 spans and summed them).
TEST(AnswerSpans, SpansWidenedToTheSameWordsAddTheirScores) {
  int cases = 0;
  for (const auto& c : read_json(qa_dir() + "/spans.json")) {
    if (c["context"] != "We saw emoji here. Paris is big.") continue;
    ++cases;
    auto tok = Tokenizer::load(test::fixtures_dir() + "/tokenizers/" + c["tokenizer"].get<std::string>());
    const tasks::AnswerOptions options = options_of(c["options"]);
    const auto windows = tasks::answer_windows(*tok, c["question"], c["context"], options, tasks::cls_token_id(*tok));
    ASSERT_EQ(windows.size(), 1u);
    const std::vector<float> start = c["windows"][0]["start_logits"], end = c["windows"][0]["end_logits"];
    const auto answers = tasks::answers_from_logits(windows, {start}, {end}, c["context"], options);
    ASSERT_FALSE(answers.empty());
    EXPECT_EQ(answers[0].text, "We saw emoji");
    // The best single span is another answer: the sum decides.
    float null = 1e6f;
    const auto spans =
        tasks::best_spans(start.data(), end.data(), windows[0].candidate, 1, options.max_answer_len, false, null);
    ASSERT_EQ(spans.size(), 1u);
    EXPECT_GT(answers[0].score, double(spans[0].score));
    expect_answers(answers, c["answers"], "top " + std::to_string(options.top_k));
  }
  EXPECT_EQ(cases, 2) << "spans.json lacks the summed-answer cases (scripts/golden/make_qa_golden.py)";
}

TEST(AnswerSpans, BestSpansStayInTheBandAndTheContext) {
  // Tokens: CLS, question, SEP, context x4, SEP. The best product is question x context, which
  // the mask excludes; a span longer than max_answer_len is excluded too.
  const std::vector<uint8_t> candidate = {1, 0, 0, 1, 1, 1, 1, 0};
  const std::vector<float> start = {0, 9, 0, 5, 0, 0, 0, 9};
  const std::vector<float> end = {0, 0, 9, 0, 0, 0, 4, 9};
  float null = 1e6f;
  auto spans = tasks::best_spans(start.data(), end.data(), candidate, 3, 3, true, null);
  ASSERT_FALSE(spans.empty());
  for (const auto& s : spans) {
    EXPECT_TRUE(candidate[size_t(s.start)] && candidate[size_t(s.end)]);
    EXPECT_LE(s.start, s.end);
    EXPECT_LT(s.end - s.start, 3);
  }
  EXPECT_EQ(spans[0].start, 3);
  EXPECT_LT(null, 1e6f);  // CLS's product, which the empty answer is scored by
}

TEST(AnswerSpans, AQuestionLongerThanTheWindowIsAnError) {
  auto tok = Tokenizer::load(test::fixtures_dir() + "/tokenizers/mpnet/tokenizer.json");
  tasks::AnswerOptions o;
  o.max_length = 12;
  o.doc_stride = 2;
  const std::string message = test::error_of([&] {
    tasks::answer_windows(*tok, "what is the name of the longest river that flows through the forest?", "The Amazon.",
                          o, tasks::cls_token_id(*tok));
  });
  EXPECT_NE(message.find("the question is longer than the window"), std::string::npos) << message;
  EXPECT_NE(message.find("shorten the question or raise --max-length"), std::string::npos) << message;
  // Where the window is already the model's positions, raising --max-length is no advice.
  tasks::AnswerOptions at_positions = o;
  at_positions.model_positions = 12;
  const std::string capped = test::error_of([&] {
    tasks::answer_windows(*tok, "what is the name of the longest river that flows through the forest?", "The Amazon.",
                          at_positions, tasks::cls_token_id(*tok));
  });
  EXPECT_EQ(capped.find("raise --max-length"), std::string::npos) << capped;
  EXPECT_NE(capped.find("the window is already the model's 12 positions, so --max-length cannot be raised"),
            std::string::npos)
      << capped;

  // A stride that leaves no new context: the window holds 12 - 4 (question) - 4 (specials) = 4.
  o.doc_stride = 4;
  const std::string stride = test::error_of([&] {
    tasks::answer_windows(*tok, "who is here?", "one two three four five six seven eight nine ten", o,
                          tasks::cls_token_id(*tok));
  });
  EXPECT_NE(stride.find("--doc-stride 4 leaves no new context"), std::string::npos) << stride;
  // The pipeline's default stride (half the window) is kept where it leaves no new context, as
  // transformers keeps it: the error says the user never gave it.
  tasks::AnswerOptions by_default = o;
  by_default.doc_stride = o.max_length / 2;
  by_default.doc_stride_default = true;
  const std::string default_stride = test::error_of([&] {
    tasks::answer_windows(*tok, "who is here?", "one two three four five six seven eight nine ten", by_default,
                          tasks::cls_token_id(*tok));
  });
  EXPECT_NE(default_stride.find("--doc-stride 6 (not given: the default, half of --max-length 12 up to 128) leaves no "
                                "new context"),
            std::string::npos)
      << default_stride;
  EXPECT_NE(test::error_of([&] {
              tasks::answer_windows(*tok, "who?", "", o, tasks::cls_token_id(*tok));
            }).find("the context is empty"),
            std::string::npos);
  o.doc_stride = 3;
  EXPECT_GT(tasks::answer_windows(*tok, "who is here?", "one two three four five six seven eight nine ten", o,
                                  tasks::cls_token_id(*tok))
                .size(),
            1u);
}

TEST(AnswerSpans, OptionsOutOfRangeAreUsageErrors) {
  auto tok = Tokenizer::load(test::fixtures_dir() + "/tokenizers/mpnet/tokenizer.json");
  for (auto set : std::vector<void (*)(tasks::AnswerOptions&)>{[](tasks::AnswerOptions& o) { o.top_k = 0; },
                                                               [](tasks::AnswerOptions& o) { o.max_answer_len = 0; },
                                                               [](tasks::AnswerOptions& o) { o.doc_stride = 400; }}) {
    tasks::AnswerOptions o;
    set(o);
    EXPECT_THROW(tasks::answer_windows(*tok, "q?", "c.", o, std::nullopt), UsageError);
  }
}

TEST(QuestionAnswering, AnswersAreThePipelinesOnTinyModels) {
  const json cases = read_json(qa_dir() + "/pipeline.json");
  if (cases.empty()) GTEST_SKIP() << "pipeline.json holds no cases (the QA model fixtures were missing)";
  for (const auto& c : cases) {
    auto tok = Tokenizer::load(test::fixtures_dir() + "/" + c["tokenizer"].get<std::string>() + "/tokenizer.json");
    const std::string what = c["model"].get<std::string>() + ": " + c["question"].get<std::string>();
    const std::string dir = test::fixtures_dir() + "/heads/" + c["model"].get<std::string>();
    if (!std::filesystem::is_directory(dir))
      GTEST_SKIP() << dir << " is missing (scripts/golden/make_head_fixtures.py)";
    auto model = load_model(dir);
    const tasks::AnswerOptions options = options_of(c["options"]);
    const auto windows = tasks::answer_windows(*tok, c["question"], c["context"], options, tasks::cls_token_id(*tok));
    EXPECT_EQ(windows.size(), c["windows"].get<size_t>()) << what;
    for (size_t batch : {size_t(1), size_t(3)}) {
      const auto answers = tasks::answer_questions(*model, *tok, {{c["question"], c["context"]}}, options, batch);
      expect_answers(answers.at(0), c["answers"], what + " (batches of " + std::to_string(batch) + " windows)");
    }
  }
}

std::string corpus(const std::string& name) {
  return test::read_text(test::fixtures_dir() + "/../fuzz/corpus/squad/" + name);
}

TEST(SquadData, ReadsTheOfficialLayoutsAndTheFlatOne) {
  const auto v1 = data::parse_squad("v1.json", corpus("v1"));
  EXPECT_FALSE(v1.v2);
  EXPECT_EQ(v1.layout, "SQuAD v1.1 JSON");
  ASSERT_EQ(v1.questions.size(), 1u);
  EXPECT_EQ(v1.questions[0].id, "q1");
  EXPECT_EQ(v1.questions[0].title, "Amazon");
  EXPECT_EQ(v1.questions[0].answers, (std::vector<std::string>{"South America", "in South America"}));
  EXPECT_EQ(v1.questions[0].answer_starts, (std::vector<int64_t>{28, 25}));

  // v2.0: an impossible question has no gold answer (plausible_answers are not gold); answer_start
  // counts characters (a\u00e7a\u00ed after Caf\u00e9 is at 17, byte 18).
  const auto v2 = data::parse_squad("v2.json", corpus("v2"));
  EXPECT_TRUE(v2.v2);
  ASSERT_EQ(v2.questions.size(), 2u);
  EXPECT_EQ(v2.questions[0].answers, std::vector<std::string>{"a\u00e7a\u00ed bowls"});
  EXPECT_TRUE(v2.questions[1].answers.empty());

  const auto flat = data::parse_squad("flat.json", corpus("flat.json"));
  EXPECT_EQ(flat.layout, "flat JSON");
  EXPECT_TRUE(flat.v2);  // its second question has no answer
  EXPECT_EQ(flat.questions[1].where, "record 2");
  const auto lines = data::parse_squad("flat.jsonl", corpus("flat.jsonl"));
  EXPECT_EQ(lines.layout, "flat JSONL");
  EXPECT_FALSE(lines.v2);
  EXPECT_EQ(lines.questions[0].answers.size(), 2u);
}

TEST(SquadData, ErrorsNameTheFileTheRecordAndWhatIsWrong) {
  const std::string moved = test::error_of([] { data::parse_squad("dev.json", corpus("bad_start")); });
  EXPECT_NE(moved.find("dev.json: data[0].paragraphs[0].qas[0] (id x): the answer \"b\" is not in its context at "
                       "answer_start 2: the context reads \"c\""),
            std::string::npos)
      << moved;
  const std::string none = test::error_of([] {
    data::parse_squad(
        "dev.json",
        R"({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "x", "question": "q", "answers": []}]}]}]})");
  });
  EXPECT_NE(none.find("(id x): no answer, which SQuAD v1.1 data must give every question"), std::string::npos) << none;
  // An empty answer text is no answer either (it was accepted, a span of nothing).
  const std::string empty_text = test::error_of([] {
    data::parse_squad("dev.json", R"({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "x", "question": "q",
        "answers": [{"text": "", "answer_start": 0}]}]}]}]})");
  });
  EXPECT_NE(empty_text.find("(id x): answer 0 has an empty text, which is no answer"), std::string::npos) << empty_text;
  const std::string missing = test::error_of([] {
    data::parse_squad("d.jsonl",
                      "{\"id\": \"1\", \"context\": \"c\", \"answers\": {\"text\": [], \"answer_start\": []}}\n");
  });
  EXPECT_NE(missing.find("d.jsonl: line 1: no \"question\" field"), std::string::npos) << missing;
  const std::string lengths = test::error_of([] {
    data::parse_squad("d.json",
                      R"([{"context": "c", "question": "q", "answers": {"text": ["c"], "answer_start": []}}])");
  });
  EXPECT_NE(lengths.find("d.json: record 1: answers.text has 1 answers but answers.answer_start 0"), std::string::npos)
      << lengths;
  // Parquet is read (test_task_parquet); a file cut short is named as no Parquet file.
  EXPECT_NE(test::error_of([] {
              data::parse_squad("t.parquet", "PAR1\x15\x04");
            }).find("t.parquet: not a Parquet file (no PAR1 magic at its start and end"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { data::parse_squad("x.json", "{\"rows\": 1}"); }).find("x.json: not SQuAD data"),
            std::string::npos);
  EXPECT_NE(
      test::error_of([] { data::parse_squad("x.jsonl", "{\"context\": \"c\"\n"); }).find("x.jsonl: line 1: not JSON"),
      std::string::npos);
}

TEST(DatasetKind, TellsSquadTaggedRecordsAndConllApart) {
  const std::string dir = test::fixtures_dir();
  EXPECT_EQ(data::guess_dataset_kind(qa_dir() + "/squad-v1.json"), data::DatasetKind::squad);
  EXPECT_EQ(data::guess_dataset_kind(qa_dir() + "/squad-v2.jsonl"), data::DatasetKind::squad);
  EXPECT_EQ(data::guess_dataset_kind(dir + "/token_classes/ner.conll"), data::DatasetKind::conll);
  EXPECT_EQ(data::guess_dataset_kind(dir + "/token_classes/ner.jsonl"), data::DatasetKind::tagged_json);
  EXPECT_EQ(data::guess_dataset_kind(dir + "/no-such-file"), data::DatasetKind::unknown);
  // Prose is not CoNLL: its lines vary in their words.
  const std::string prose = ::testing::TempDir() + "/prose.txt";
  std::ofstream(prose) << "The cat sat on the mat.\nIt was warm.\n";
  EXPECT_EQ(data::guess_dataset_kind(prose), data::DatasetKind::unknown);
  // A .csv or .tsv file that is not CoNLL text is a sequence classifier's table, named by its extension.
  EXPECT_EQ(data::guess_dataset_kind(dir + "/train/tiny.csv"), data::DatasetKind::table);
  EXPECT_EQ(data::dataset_kind_name(data::DatasetKind::table, dir + "/train/tiny.csv"), "a table (csv rows)");
  EXPECT_EQ(data::dataset_kind_task(data::DatasetKind::table), "sequence-classification");
  EXPECT_EQ(data::guess_dataset_kind(dir + "/token_classes/ner.conll"), data::DatasetKind::conll);
}

TEST(QuestionAnswering, BenchRunsMlperfsLengthForAQuestionAnsweringModel) {
  BenchConfig c;
  c.model = "preset:bert-large-uncased";  // published with a question-answering head
  EXPECT_EQ(question_answering_bench_length(c), 384);
  c.model = test::fixtures_dir() + "/heads/bert-qa-f32";  // 32 positions
  EXPECT_EQ(question_answering_bench_length(c), 32);
  c.model = test::fixtures_dir() + "/heads/bert-mlm-f32";
  EXPECT_EQ(question_answering_bench_length(c), 0);
  c.head = "question-answering";
  EXPECT_EQ(question_answering_bench_length(c), 32);
  c.model = "preset:distilbert-base-uncased";
  c.head = "auto";
  EXPECT_EQ(question_answering_bench_length(c), 0);
}

TEST(SquadMetric, ScoresAreTheOfficialScripts) {
  const json golden = read_json(qa_dir() + "/squad.json");
  std::vector<std::vector<std::string>> gold, gold_v1;
  std::vector<std::string> preds, preds_v1;
  for (const auto& q : golden["questions"]) {
    const auto g = q["gold"].get<std::vector<std::string>>();
    const std::string p = q["prediction"];
    SCOPED_TRACE(p);
    EXPECT_EQ(tasks::normalize_answer(p), q["normalized_prediction"].get<std::string>());
    const auto v2 = tasks::score_question(g, p, tasks::SquadVersion::v2);
    EXPECT_EQ(v2.exact, q["v2_exact"].get<double>());
    EXPECT_NEAR(v2.f1, q["v2_f1"].get<double>(), 1e-12);
    gold.push_back(g);
    preds.push_back(p);
    if (q.contains("v1_exact")) {
      const auto v1 = tasks::score_question(g, p, tasks::SquadVersion::v1);
      EXPECT_EQ(v1.exact, q["v1_exact"].get<double>());
      EXPECT_NEAR(v1.f1, q["v1_f1"].get<double>(), 1e-12);
      gold_v1.push_back(g);
      preds_v1.push_back(p);
    }
  }
  const auto v2 = tasks::squad_scores(gold, preds, tasks::SquadVersion::v2);
  const json& w2 = golden["v2"];
  EXPECT_EQ(v2.total, w2["total"].get<int64_t>());
  EXPECT_NEAR(v2.exact, w2["exact"].get<double>(), 1e-9);
  EXPECT_NEAR(v2.f1, w2["f1"].get<double>(), 1e-9);
  EXPECT_EQ(v2.has_answer_total, w2["HasAns_total"].get<int64_t>());
  EXPECT_NEAR(v2.has_answer_exact, w2["HasAns_exact"].get<double>(), 1e-9);
  EXPECT_NEAR(v2.has_answer_f1, w2["HasAns_f1"].get<double>(), 1e-9);
  EXPECT_EQ(v2.no_answer_total, w2["NoAns_total"].get<int64_t>());
  EXPECT_NEAR(v2.no_answer_exact, w2["NoAns_exact"].get<double>(), 1e-9);
  EXPECT_NEAR(v2.no_answer_f1, w2["NoAns_f1"].get<double>(), 1e-9);
  const auto v1 = tasks::squad_scores(gold_v1, preds_v1, tasks::SquadVersion::v1);
  EXPECT_EQ(v1.total, golden["v1"]["total"].get<int64_t>());
  EXPECT_NEAR(v1.exact, golden["v1"]["exact_match"].get<double>(), 1e-9);
  EXPECT_NEAR(v1.f1, golden["v1"]["f1"].get<double>(), 1e-9);
}

}  // namespace
}  // namespace tach
