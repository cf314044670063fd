// tach bench --accuracy on a token classifier and a question-answering model: tach's pass gives
// tach eval's figures (one implementation), accuracy.json's per-token results and engines go there
// and back, the findings and tables say each task's metrics, a masked LM is refused saying what to
// use, and other engines' passes against the stand-in worker (tests/fixtures/engines/worker.py:
// zero logits, every word tagged with the first label, "O") are scored by tach's code and compared
// with tach's tags. Needs only python3.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "accuracy_fixtures.h"
#include "bench/engine_point.h"
#include "bench/task_passes.h"
#include "data/conll.h"
#include "report/engine_report.h"
#include "tach/bench.h"
#include "tach/question_answering.h"
#include "tach/report.h"
#include "tach/token_classification.h"
#include "test_util.h"

using namespace tach;

namespace {

using test::ScopedEnv;

// A token classifier on CoNLL sentences or a question-answering model on SQuAD questions, read in
// batches of 4 (several batches).
BenchConfig task_config(const std::string& runs_dir, const std::string& task) {
  const std::string fx = test::fixtures_dir();
  if (task == "token-classification")
    return test::one_point_accuracy_sweep(runs_dir, "bench", fx + "/heads/bert-tokcls-f32",
                                          fx + "/token_classes/tokenizer-wordpiece", fx + "/token_classes/ner.conll",
                                          4);
  return test::one_point_accuracy_sweep(runs_dir, "bench", fx + "/heads/bert-qa-f32",
                                        fx + "/question_answering/tokenizer-tiny",
                                        fx + "/question_answering/squad-v1.json", 4);
}

AccuracyResult token_result() {
  AccuracyResult r;
  r.device = "cpu", r.dtype = "f32", r.task = "token-classification", r.examples = 12;
  r.scores = {{"f1", 0.5}, {"precision", 0.4}, {"recall", 2.0 / 3}, {"word_accuracy", 0.75}};
  r.scheme = "conlleval";
  r.tokenize_s = 0.01, r.model_s = 0.02, r.total_s = 0.04, r.samples_per_s = 300, r.warmup_batches = 1;
  r.predicted_text = {"O", "B-PER", "I-PER"};
  return r;
}

EngineAccuracy engine_pass(const std::string& task, std::vector<std::pair<std::string, double>> scores,
                           int64_t differ) {
  EngineAccuracy e = test::recorded_engine_pass("torch", differ, 1.25);
  e.task = task;
  e.examples = task == "token-classification" ? 12 : 7;
  e.scores = std::move(scores);
  return e;
}

}  // namespace

TEST(TaskAccuracyFile, PerTokenResultsAndEnginesGoThereAndBack) {
  AccuracyResult qa;
  qa.device = "cpu", qa.dtype = "bf16", qa.task = "question-answering", qa.examples = 7;
  qa.scores = {{"exact_match", 100.0 / 7}, {"f1", std::nan("")}};  // NaN is written as null, read as NaN
  qa.scheme = "SQuAD v1.1";
  nlohmann::json file = nlohmann::json::parse(accuracy_to_json({token_result(), qa}, "dataset ner.conll"));
  const nlohmann::json& tok = file["results"][0];
  EXPECT_EQ(tok["task"], "token-classification");
  EXPECT_EQ(tok["metrics"]["f1"], 0.5);
  EXPECT_FALSE(tok.contains("accuracy")) << "a per-token pass has no sequence classifier's figures";
  EXPECT_TRUE(file["results"][1]["metrics"]["f1"].is_null());
  file["results"][0]["predictions"] = token_result().predicted_text;
  const std::vector<AccuracyResult> back = accuracy_from_json(file.dump(), "accuracy.json", nullptr);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].task, "token-classification");
  EXPECT_EQ(back[0].scores, token_result().scores);
  EXPECT_EQ(back[0].scheme, "conlleval");
  EXPECT_EQ(back[0].predicted_text, token_result().predicted_text);
  EXPECT_DOUBLE_EQ(back[0].model_s, 0.02);
  EXPECT_EQ(back[1].task, "question-answering");
  EXPECT_EQ(back[1].dtype, "bf16");
  EXPECT_DOUBLE_EQ(accuracy_score(back[1].scores, "exact_match"), 100.0 / 7);
  EXPECT_TRUE(std::isnan(accuracy_score(back[1].scores, "f1")));

  const std::vector<EngineAccuracy> engines{engine_pass("token-classification", token_result().scores, 2)};
  const std::string engines_json = engine_accuracy_to_json(engines);
  const nlohmann::json with_engines = {{"engines", nlohmann::json::parse(engines_json)}};
  EXPECT_EQ(with_engines["engines"][0]["metrics"]["recall"], 2.0 / 3);
  EXPECT_FALSE(with_engines["engines"][0].contains("accuracy"));
  const std::vector<EngineAccuracy> engines_back = engine_accuracy_from_json(with_engines.dump(), "a");
  ASSERT_EQ(engines_back.size(), 1u);
  EXPECT_EQ(engines_back[0].task, "token-classification");
  EXPECT_EQ(engines_back[0].scores, token_result().scores);
  EXPECT_EQ(engines_back[0].differ, 2);
}

TEST(TaskAccuracyFile, MetricsOfAnUnknownTaskOrMissingAMetricAreErrorsNamingTheFile) {
  const auto read = [](const std::string& result) {
    accuracy_from_json(R"({"schema": "tach.bench.accuracy/1", "dataset": "d", "results": [)" + result + "]}",
                       "runs/x/accuracy.json", nullptr);
  };
  const std::string timings = R"("tokenize_s": 0, "model_s": 0, "total_s": 0, "samples_per_s": 0)";
  try {
    read(R"({"task": "translation", "examples": 1, "metrics": {}, )" + timings + "}");
    FAIL() << "an unknown task was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs/x/accuracy.json: the task \"translation\""), std::string::npos)
        << e.what();
  }
  try {
    read(R"({"task": "question-answering", "examples": 1, "metrics": {"f1": 1}, )" + timings + "}");
    FAIL() << "metrics without exact_match were read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("have no exact_match"), std::string::npos) << e.what();
  }
}

TEST(TaskAccuracyFile, AResumedRunKeepsAnEnginesPassOnlyForTheSameTask) {
  const std::vector<EngineAccuracy> kept{engine_pass("token-classification", token_result().scores, 0)};
  AccuracyResult tach = token_result();
  EXPECT_NE(bench::kept_engine_accuracy(kept, "torch", tach, "/venv/bin/python"), nullptr);
  tach.task = "question-answering";
  EXPECT_EQ(bench::kept_engine_accuracy(kept, "torch", tach, "/venv/bin/python"), nullptr);
}

TEST(TaskAccuracyFindings, EachTaskSaysItsMetricAndWhatDiffers) {
  const std::vector<AccuracyResult> tach{token_result()};
  EXPECT_EQ(report::engine_accuracy_line(engine_pass("token-classification", token_result().scores, 0), tach),
            "torch's entity F1 equals tach's (0.5000 on 12 sentences, cpu/f32; 0 tags differ)");
  EXPECT_EQ(report::engine_accuracy_line(
                engine_pass("token-classification",
                            {{"f1", 0.25}, {"precision", 0.2}, {"recall", 1.0 / 3}, {"word_accuracy", 0.7}}, 1),
                tach),
            "torch's entity F1 is 0.2500, tach's 0.5000 (-0.2500 on 12 sentences, cpu/f32; entity F1 0.2500, "
            "precision 0.2000, recall 0.3333, word accuracy 0.7000; 1 tag differs)");
  AccuracyResult qa;
  qa.device = "cpu", qa.dtype = "f32", qa.task = "question-answering", qa.examples = 7;
  qa.scores = {{"exact_match", 100.0 / 7}, {"f1", 100.0 / 7}};
  EXPECT_EQ(report::engine_accuracy_line(engine_pass("question-answering", qa.scores, 2), {qa}),
            "torch's SQuAD F1 equals tach's (14.29% on 7 questions, cpu/f32; 2 answers differ)");
  // The table's columns are the task's metrics.
  const std::string table =
      report::engine_accuracy_text({engine_pass("question-answering", qa.scores, 1)}, std::vector<AccuracyResult>{qa});
  EXPECT_NE(table.find("questions exact match    F1 differ from tach wall s"), std::string::npos) << table;
  EXPECT_NE(table.find("      14.29 14.29                1   1.25"), std::string::npos) << table;
  // tach's own pass in summary.txt's accuracy block.
  const std::string text = accuracy_text({token_result()}, "dataset ner.conll", false);
  EXPECT_NE(text.find("cpu/f32: 12 sentences (seqeval, conlleval tags): entity F1 0.5000, precision 0.4000, recall "
                      "0.6667, word accuracy 0.7500; 0.04 s in all"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Per class"), std::string::npos) << text;
}

TEST(TaskAccuracySweep, TachsTokenPassGivesTachEvalsFigures) {
  test::TempDir dir;
  const SweepOutcome out = run_bench(task_config(dir.path(), "token-classification"));
  ASSERT_EQ(out.accuracy.size(), 1u);
  const AccuracyResult& r = out.accuracy[0];
  EXPECT_EQ(r.task, "token-classification");
  BenchConfig eval = task_config(dir.path(), "token-classification");
  eval.run_id = "eval";
  const TokenEvalOutcome e = run_token_eval(eval, TokenEvalOptions{});
  ASSERT_EQ(e.passes.size(), 1u);
  EXPECT_EQ(r.examples, e.passes[0].sentences);
  EXPECT_EQ(accuracy_score(r.scores, "f1"), e.passes[0].micro.f1);
  EXPECT_EQ(accuracy_score(r.scores, "precision"), e.passes[0].micro.precision);
  EXPECT_EQ(accuracy_score(r.scores, "recall"), e.passes[0].micro.recall);
  EXPECT_EQ(accuracy_score(r.scores, "word_accuracy"), e.passes[0].word_accuracy);
  // tach eval's file beside accuracy.json, for tach report and tach compare.
  const nlohmann::json file = nlohmann::json::parse(test::read_text(out.run_dir + "/token_classification.json"));
  EXPECT_EQ(file["passes"][0]["micro"]["f1"], e.passes[0].micro.f1);
}

TEST(TaskAccuracySweep, TachsQuestionAnsweringPassGivesTachEvalsFigures) {
  test::TempDir dir;
  const SweepOutcome out = run_bench(task_config(dir.path(), "question-answering"));
  ASSERT_EQ(out.accuracy.size(), 1u);
  const AccuracyResult& r = out.accuracy[0];
  EXPECT_EQ(r.task, "question-answering");
  BenchConfig eval = task_config(dir.path(), "question-answering");
  eval.run_id = "eval";
  AnswerOptions options;  // tach eval's defaults: half the window shared, up to 128
  options.doc_stride = 128, options.doc_stride_default = true;
  const QaEvalOutcome e = run_qa_eval(eval, options);
  ASSERT_EQ(e.passes.size(), 1u);
  EXPECT_EQ(r.examples, 7);
  EXPECT_EQ(accuracy_score(r.scores, "exact_match"), e.passes[0].scores.exact);
  EXPECT_EQ(accuracy_score(r.scores, "f1"), e.passes[0].scores.f1);
  EXPECT_EQ(r.scheme, "SQuAD v1.1");
}

TEST(TaskAccuracySweep, AnEnginesTagsAreScoredByTachsCodeAndComparedWithTachs) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");  // zero logits: every word "O", the first label
  const BenchConfig c = test::against_stand_in_torch(task_config(dir.path(), "token-classification"));
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.accuracy.size(), 1u);
  ASSERT_EQ(out.engine_accuracy.size(), 1u);
  const EngineAccuracy& e = out.engine_accuracy[0];
  ASSERT_EQ(e.status, "ok") << e.reason;
  EXPECT_EQ(e.task, "token-classification");
  EXPECT_EQ(e.examples, out.accuracy[0].examples);
  // Every word "O": no entity predicted, and the word accuracy is the share of "O" among the words.
  data::TaggedJsonOptions jo;
  const std::vector<data::TaggedSentence> sentences = data::read_tagged_file(c.dataset.path, "auto", -1, jo);
  int64_t words = 0, outside = 0;
  for (const auto& s : sentences)
    for (const auto& tag : s.tags) ++words, outside += tag == "O";
  EXPECT_EQ(accuracy_score(e.scores, "precision"), 0.0);
  EXPECT_EQ(accuracy_score(e.scores, "f1"), 0.0);
  EXPECT_DOUBLE_EQ(accuracy_score(e.scores, "word_accuracy"), double(outside) / double(words));
  // Differ: tach's tags other than "O", counted from accuracy.json's kept predictions.
  const nlohmann::json file = nlohmann::json::parse(test::read_text(out.run_dir + "/accuracy.json"));
  const auto tach_tags = file["results"][0]["predictions"].get<std::vector<std::string>>();
  EXPECT_EQ(int64_t(tach_tags.size()), words);
  int64_t not_outside = 0;
  for (const auto& t : tach_tags) not_outside += t != "O";
  EXPECT_EQ(e.differ, not_outside);
  EXPECT_EQ(file["engines"][0]["differ_from_tach"], not_outside);
  const std::string summary = summary_text(out.config, out);
  EXPECT_NE(summary.find("- torch's entity F1 "), std::string::npos) << summary;
  EXPECT_NE(summary.find("Accuracy per engine"), std::string::npos) << summary;
  // The report's engine panel and tach eval's section both come from the run directory.
  write_run_reports(out.config, out);
  const RunReport report = build_run_report(out.run_dir);
  EXPECT_NE(report.html.find("tagged the words of tach's accuracy pass"), std::string::npos);
}

TEST(TaskAccuracySweep, AnEnginesAnswersAreScoredAndAResumedRunKeepsThem) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");
  const SweepOutcome out = run_bench(test::against_stand_in_torch(task_config(dir.path(), "question-answering")));
  ASSERT_EQ(out.engine_accuracy.size(), 1u);
  const EngineAccuracy& e = out.engine_accuracy[0];
  ASSERT_EQ(e.status, "ok") << e.reason;
  EXPECT_EQ(e.examples, 7);
  EXPECT_GE(e.differ, 0);
  EXPECT_LE(e.differ, 7);
  // Resumed: both passes kept, nothing measured again.
  test::Notes notes;
  const SweepOutcome again = resume_bench(out.run_dir, notes.observer());
  for (const auto& n : notes.lines) EXPECT_EQ(n.find("accuracy pass"), std::string::npos) << n;
  ASSERT_EQ(again.engine_accuracy.size(), 1u);
  EXPECT_EQ(again.engine_accuracy[0].scores, e.scores);
  EXPECT_EQ(again.accuracy[0].scores, out.accuracy[0].scores);
}

TEST(TaskAccuracySweep, AMaskedLmIsRefusedSayingWhatToUse) {
  test::TempDir dir;
  BenchConfig c = task_config(dir.path(), "token-classification");
  c.model = test::fixtures_dir() + "/heads/bert-mlm-f32";
  c.dataset.path = test::fixtures_dir() + "/train/tiny.csv";
  try {
    (void)run_bench(c);
    FAIL() << "a masked LM's accuracy pass ran";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("runs a masked-lm head"), std::string::npos) << what;
    EXPECT_NE(what.find("drop --accuracy"), std::string::npos) << what;
    EXPECT_NE(what.find("tach fill-mask"), std::string::npos) << what;
  }
}
