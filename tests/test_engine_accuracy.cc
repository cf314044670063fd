// Other engines' accuracy passes (tach bench --engine ... --accuracy): accuracy.json's "engines"
// and back, what a resumed run keeps, the findings' words, and sweeps against the stand-in worker
// (tests/fixtures/engines/worker.py: its logits favour the first label, or the last in mode
// last-label), which needs only python3.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "accuracy_fixtures.h"
#include "bench/engine_point.h"
#include "report/engine_report.h"
#include "tach/bench.h"
#include "tach/report.h"
#include "test_util.h"

using namespace tach;

namespace {

using test::Notes;
using test::ScopedEnv;

EngineAccuracy engine_pass(const std::string& engine, double accuracy, int64_t differ) {
  EngineAccuracy e = test::recorded_engine_pass(engine, differ, 1.5);
  e.examples = 872;
  e.accuracy = accuracy, e.macro_f1 = accuracy - 0.01;
  return e;
}

AccuracyResult tach_pass(double accuracy) {
  AccuracyResult r;
  r.device = "cpu", r.dtype = "f32", r.examples = 872, r.accuracy = accuracy;
  return r;
}

// tiny.csv (48 texts, 34 of label 0) on the 2-label BERT fixture, which classifies each as label 0,
// read in three batches, against the stand-in worker's torch.
BenchConfig accuracy_sweep(const std::string& runs_dir) {
  const std::string fx = test::fixtures_dir();
  return test::against_stand_in_torch(test::one_point_accuracy_sweep(runs_dir, "r", fx + "/encoders/bert-cls2-f32",
                                                                     fx + "/token_classes/tokenizer-wordpiece",
                                                                     fx + "/train/tiny.csv", 16));
}

}  // namespace

TEST(EngineAccuracyFile, EveryFieldGoesThereAndBack) {
  EngineAccuracy failed = engine_pass("onnxruntime", 0, -1);
  failed.dtype = "bf16", failed.status = "failed", failed.reason = "onnxruntime has no bf16 kernels";
  failed.macro_f1 = 0;  // a failed pass has no figures to write
  const std::vector<EngineAccuracy> passes{engine_pass("torch", 0.9106, 0), engine_pass("torch-compile", 0.9094, -1),
                                           failed};
  const nlohmann::json file = {{"schema", "tach.bench.accuracy/1"},
                               {"engines", nlohmann::json::parse(engine_accuracy_to_json(passes))}};
  EXPECT_TRUE(file["engines"][1]["differ_from_tach"].is_null());  // not compared: null, not a count
  EXPECT_FALSE(file["engines"][2].contains("accuracy"));          // a failed pass has no figures
  const std::vector<EngineAccuracy> back = engine_accuracy_from_json(file.dump(), "accuracy.json");
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(back[i].engine, passes[i].engine);
    EXPECT_EQ(back[i].device, passes[i].device);
    EXPECT_EQ(back[i].dtype, passes[i].dtype);
    EXPECT_EQ(back[i].status, passes[i].status);
    EXPECT_EQ(back[i].reason, passes[i].reason);
    EXPECT_EQ(back[i].examples, passes[i].examples);
    EXPECT_DOUBLE_EQ(back[i].accuracy, passes[i].accuracy);
    EXPECT_DOUBLE_EQ(back[i].macro_f1, passes[i].macro_f1);
    EXPECT_EQ(back[i].differ, passes[i].differ);
    EXPECT_DOUBLE_EQ(back[i].wall_s, passes[i].wall_s);
    EXPECT_EQ(back[i].versions, passes[i].versions);
    EXPECT_EQ(back[i].python, passes[i].python);
  }
  // A file without engines (tach alone, or written before engines had passes) has none.
  EXPECT_TRUE(engine_accuracy_from_json(R"({"schema": "tach.bench.accuracy/1", "results": []})", "a").empty());
  EXPECT_THROW(engine_accuracy_from_json(R"({"engines": [{"engine": "torch", "device": "cpu", "dtype": "f32",
      "status": "maybe", "examples": 3}]})",
                                         "a"),
               Error);
}

TEST(EngineAccuracyFile, AResumedRunKeepsOnlyAnOkPassOfTheSameEnginePassAndPython) {
  std::vector<EngineAccuracy> kept{engine_pass("torch", 0.91, 0)};
  EngineAccuracy failed = engine_pass("onnxruntime", 0, -1);
  failed.status = "failed";
  kept.push_back(failed);
  const AccuracyResult tach = tach_pass(0.91);
  const std::string python = "/venv/bin/python";
  ASSERT_NE(bench::kept_engine_accuracy(kept, "torch", tach, python), nullptr);
  EXPECT_EQ(bench::kept_engine_accuracy(kept, "torch", tach, python)->engine, "torch");
  EXPECT_EQ(bench::kept_engine_accuracy(kept, "onnxruntime", tach, python), nullptr);  // failed: measured again
  EXPECT_EQ(bench::kept_engine_accuracy(kept, "torch-compile", tach, python), nullptr);
  EXPECT_EQ(bench::kept_engine_accuracy(kept, "torch", tach, "python3"), nullptr);  // another interpreter
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"device", "cuda:0"}, {"dtype", "bf16"}, {"examples", "100"}}) {
    AccuracyResult other = tach;
    if (field == "device") other.device = value;
    if (field == "dtype") other.dtype = value;
    if (field == "examples") other.examples = 100;
    EXPECT_EQ(bench::kept_engine_accuracy(kept, "torch", other, python), nullptr) << field;
  }
}

TEST(EngineAccuracyFindings, EqualDifferentNotComparedAndFailedEachSaySo) {
  const std::vector<AccuracyResult> tach{tach_pass(794.0 / 872)};
  EXPECT_EQ(report::engine_accuracy_line(engine_pass("onnxruntime", 794.0 / 872, 0), tach),
            "onnxruntime's accuracy equals tach's (0.9106 on 872 examples, cpu/f32; 0 predictions differ)");
  // The same count of correct answers from other predictions: equal, and the differences said.
  EXPECT_EQ(report::engine_accuracy_line(engine_pass("torch", 794.0 / 872, 2), tach),
            "torch's accuracy equals tach's (0.9106 on 872 examples, cpu/f32; 2 predictions differ)");
  EXPECT_EQ(report::engine_accuracy_line(engine_pass("torch", 792.0 / 872, 1), tach),
            "torch's accuracy is 0.9083, tach's 0.9106 (-0.0023 on 872 examples, cpu/f32; 1 prediction differs)");
  EXPECT_EQ(report::engine_accuracy_line(engine_pass("torch", 794.0 / 872, -1), tach),
            "torch's accuracy equals tach's (0.9106 on 872 examples, cpu/f32; tach's predictions were not kept, so "
            "none were compared)");
  EngineAccuracy failed = engine_pass("onnxruntime", 0, -1);
  failed.dtype = "bf16", failed.status = "failed", failed.reason = "onnxruntime has no bf16 kernels";
  EXPECT_EQ(report::engine_accuracy_line(failed, tach),
            "onnxruntime cpu/bf16: no accuracy pass: onnxruntime has no bf16 kernels");
  EXPECT_EQ(report::engine_accuracy_text({}, tach), "");  // tach alone: no table
}

TEST(EngineAccuracySweep, AnEnginesPassIsScoredByTachsMetricsAndComparedWithTachsPredictions) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");  // zeros: every row label 0, as tach's
  const SweepOutcome out = run_bench(accuracy_sweep(dir.path()));
  ASSERT_EQ(out.accuracy.size(), 1u);
  ASSERT_EQ(out.accuracy[0].predicted, std::vector<int32_t>(48, 0));  // the fixture classifies every text as 0
  ASSERT_EQ(out.engine_accuracy.size(), 1u);
  const EngineAccuracy& e = out.engine_accuracy[0];
  EXPECT_EQ(e.status, "ok") << e.reason;
  EXPECT_EQ(e.engine, "torch");
  EXPECT_EQ(e.examples, 48);
  EXPECT_DOUBLE_EQ(e.accuracy, 34.0 / 48);  // tiny.csv's share of label 0
  EXPECT_DOUBLE_EQ(e.macro_f1, out.accuracy[0].macro_f1);
  EXPECT_EQ(e.differ, 0);
  const std::string summary = summary_text(out.config, out);
  EXPECT_NE(summary.find("- torch's accuracy equals tach's (0.7083 on 48 examples, cpu/f32; 0 predictions differ)"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("Accuracy per engine"), std::string::npos) << summary;
  // accuracy.json: the engine's pass, and tach's predictions to compare a later one with.
  const nlohmann::json file = nlohmann::json::parse(test::read_text(out.run_dir + "/accuracy.json"));
  ASSERT_EQ(file["engines"].size(), 1u);
  EXPECT_EQ(file["engines"][0]["differ_from_tach"], 0);
  EXPECT_EQ(file["results"][0]["predictions"].size(), 48u);
  // summary.json and the report's engine panel carry it too.
  write_run_reports(out.config, out);
  EXPECT_EQ(nlohmann::json::parse(test::read_text(out.run_dir + "/summary.json"))["engine_accuracy"].size(), 1u);
  const RunReport report = build_run_report(out.run_dir);
  EXPECT_NE(report.html.find("Accuracy per engine"), std::string::npos);
}

TEST(EngineAccuracySweep, PredictionsOfAnotherLabelAreCountedAndTheDifferenceSaid) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "last-label");  // every row label 1, where tach says 0
  const SweepOutcome out = run_bench(accuracy_sweep(dir.path()));
  ASSERT_EQ(out.engine_accuracy.size(), 1u);
  const EngineAccuracy& e = out.engine_accuracy[0];
  EXPECT_EQ(e.status, "ok") << e.reason;
  EXPECT_DOUBLE_EQ(e.accuracy, 14.0 / 48);
  EXPECT_EQ(e.differ, 48);
  const std::string summary = summary_text(out.config, out);
  EXPECT_NE(summary.find("- torch's accuracy is 0.2917, tach's 0.7083 (-0.4167 on 48 examples, cpu/f32; 48 "
                         "predictions differ)"),
            std::string::npos)
      << summary;
}

TEST(EngineAccuracySweep, AFailedPassIsRecordedWithItsReasonAndMeasuredAgainOnResume) {
  test::TempDir dir;
  SweepOutcome out;
  {
    ScopedEnv mode("TACH_TEST_WORKER_MODE", "oom-on-load");
    out = run_bench(accuracy_sweep(dir.path()));
  }
  ASSERT_EQ(out.engine_accuracy.size(), 1u);
  EXPECT_EQ(out.engine_accuracy[0].status, "failed");
  EXPECT_NE(out.engine_accuracy[0].reason.find("cannot allocate 12 GiB"), std::string::npos)
      << out.engine_accuracy[0].reason;
  EXPECT_NE(summary_text(out.config, out).find("- torch cpu/f32: no accuracy pass: "), std::string::npos);
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");
  Notes notes;
  const SweepOutcome again = resume_bench(out.run_dir, notes.observer());
  EXPECT_TRUE(notes.has("accuracy pass of engine torch")) << "a failed pass is measured again";
  ASSERT_EQ(again.engine_accuracy.size(), 1u);
  EXPECT_EQ(again.engine_accuracy[0].status, "ok") << again.engine_accuracy[0].reason;
  EXPECT_EQ(again.engine_accuracy[0].differ, 0);
}

TEST(EngineAccuracySweep, AResumedRunReusesAPassOnlyForItsOwnPython) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");
  const SweepOutcome out = run_bench(accuracy_sweep(dir.path()));
  ASSERT_EQ(out.engine_accuracy.size(), 1u);
  {
    Notes notes;
    const SweepOutcome again = resume_bench(out.run_dir, notes.observer());
    EXPECT_FALSE(notes.has("accuracy pass")) << "tach's and the engine's passes are both kept";
    ASSERT_EQ(again.engine_accuracy.size(), 1u);
    EXPECT_DOUBLE_EQ(again.engine_accuracy[0].wall_s, out.engine_accuracy[0].wall_s);
  }
  // The same file, as if the engine's pass had run under another interpreter: measured again, and
  // compared with tach's kept predictions.
  const std::string path = out.run_dir + "/accuracy.json";
  nlohmann::json file = nlohmann::json::parse(test::read_text(path));
  file["engines"][0]["python"] = "/another/python";
  std::ofstream(path) << file.dump(2);
  Notes notes;
  const SweepOutcome again = resume_bench(out.run_dir, notes.observer());
  EXPECT_TRUE(notes.has("accuracy pass of engine torch"));
  EXPECT_FALSE(notes.has("accuracy pass on")) << "tach's own pass is kept";
  ASSERT_EQ(again.engine_accuracy.size(), 1u);
  EXPECT_EQ(again.engine_accuracy[0].python, test::fixtures_dir() + "/engines/python");
  EXPECT_EQ(again.engine_accuracy[0].differ, 0);
}
