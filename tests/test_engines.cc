// The engine worker client (src/engines): the protocol against a stand-in worker in Python's
// standard library (tests/fixtures/engines/worker.py) that behaves, or exits, hangs, writes
// garbage, or lacks packages on request; and the real python-matmul worker where tach's Python
// package has it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "engines/engine_names.h"
#include "engines/engine_protocol.h"
#include "engines/worker_process.h"
#include "tach/bench.h"
#include "tach/report.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace tach;
using namespace tach::engines;

namespace {

std::string fixture_worker() { return test::fixtures_dir() + "/engines/worker.py"; }

EngineLaunch fixture_launch(const test::TempDir& dir, const std::string& mode, const std::string& engine = "torch") {
  EngineLaunch l;
  l.engine = engine;
  l.command = {"python3", fixture_worker(), "--engine", engine, "--mode", mode};
  l.stderr_log = dir.file("engines/" + engine + ".log");
  l.ready_timeout_s = 30;
  return l;
}

std::string tiny_model() { return test::fixtures_dir() + "/encoders/bert-cls2-f32"; }

}  // namespace

TEST(WorkerProcess, ReadsLinesAndCollectsStderrToItsLog) {
  test::TempDir dir;
  WorkerProcess p({{"sh", "-c", "echo to-stderr >&2; read x; echo \"got $x\"; echo second"}, {}, dir.file("w.log")});
  p.write_line("hello");
  EXPECT_EQ(p.read_line(10, "a line"), "got hello");
  EXPECT_EQ(p.read_line(10, "a line"), "second");
  EXPECT_EQ(p.wait_exit(10), "exit 0");
  EXPECT_EQ(p.stderr_tail(), "to-stderr");
}

TEST(WorkerProcess, ADeadlineKillsTheWholeProcessGroup) {
  test::TempDir dir;
  // The worker starts a child of its own that would outlive it; killing the group ends both.
  WorkerProcess p({{"sh", "-c", "sleep 300 & echo $!; sleep 300"}, {}, dir.file("w.log")});
  const pid_t child = pid_t(std::stol(p.read_line(10, "the child's pid")));
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)p.read_line(0.3, "a reply that never comes");
    FAIL() << "no timeout";
  } catch (const WorkerFailure& e) {
    EXPECT_EQ(e.kind(), "timeout");
    EXPECT_NE(std::string(e.what()).find("gave no a reply that never comes within 0.3 s"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
  EXPECT_FALSE(p.running());
  EXPECT_EQ(p.exit_description().rfind("signal 9", 0), 0u) << p.exit_description();
  // The grandchild is gone too (kill -0 fails), after a moment for init to reap it.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(child, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "pid " << child << " outlived its worker";
}

TEST(WorkerProcess, ACommandThatDoesNotExistIsAnError) {
  test::TempDir dir;
  EXPECT_NE(test::error_of([&] {
              WorkerProcess p({{"/no/such/python3"}, {}, dir.file("w.log")});
            }).find("cannot start /no/such/python3"),
            std::string::npos);
}

TEST(EngineClient, SpeaksTheProtocolWithAWorker) {
  test::TempDir dir;
  auto c = EngineClient::start(fixture_launch(dir, "ok"));
  EXPECT_EQ(c->ready().engine, "torch");
  EXPECT_EQ(c->ready().protocol, 1);
  EXPECT_TRUE(c->ready().versions.contains("python"));
  const auto load = c->call({{"op", "load"},
                             {"model", tiny_model()},
                             {"task", "sequence-classification"},
                             {"dtype", "f32"},
                             {"device", "cpu"},
                             {"threads", 1},
                             {"cache_dir", dir.path()},
                             {"train", nullptr}});
  EXPECT_EQ(load.at("parameters"), 10);
  EXPECT_EQ(
      c->call({{"op", "inputs"}, {"input_ids", {{1, 2, 3}, {4, 5, 6}}}, {"attention_mask", {{1, 1, 1}, {1, 1, 0}}}})
          .at("batch"),
      2);
  const auto t = c->call({{"op", "time"}, {"calls", 3}}, request_deadline_s("time", 3, 0.01));
  ASSERT_EQ(t.at("ns").size(), 3u);
  EXPECT_GT(t.at("ns")[0].get<int64_t>(), 0);
  EXPECT_GT(ping_round_trip_ns(*c, 5), 0);
  // ok false: an error of its kind, and the worker goes on serving.
  try {
    (void)c->call({{"op", "nonsense"}});
    FAIL() << "no error";
  } catch (const EngineReplyError& e) { EXPECT_EQ(e.kind(), "bad_request"); }
  EXPECT_EQ(c->call({{"op", "ping"}}).at("ok"), true);
  c->quit();
  EXPECT_EQ(c->process().exit_description(), "exit 0");
}

TEST(EngineClient, MissingPackagesAreNamedWithThePipCommand) {
  test::TempDir dir;
  try {
    (void)EngineClient::start(fixture_launch(dir, "unavailable", "onnxruntime"));
    FAIL() << "no error";
  } catch (const EngineUnavailable& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("engine onnxruntime needs the Python packages onnxruntime, onnx, which python3 cannot import"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("`python3 -m pip install onnxruntime onnx`"), std::string::npos) << m;
    EXPECT_NE(m.find("--python PATH"), std::string::npos) << m;
  }
}

// Each way a worker can fail becomes a WorkerFailure of its kind, the worker killed, the message
// naming what was awaited and carrying the last lines of its stderr.
TEST(EngineClient, AWorkerThatExitsHangsOrWritesGarbageIsKilledAndNamed) {
  struct Case {
    std::string mode, kind, says;
  };
  for (const Case& k : {Case{"exit-on-time", "exited", "the worker exited (exit 7) while tach awaited reply to 'time'"},
                        Case{"hang-on-time", "timeout", "the worker gave no reply to 'time' within 1 s"},
                        Case{"garbage-on-time", "io", "not JSON as its reply to 'time': Some library printed this"}}) {
    SCOPED_TRACE(k.mode);
    test::TempDir dir;
    auto c = EngineClient::start(fixture_launch(dir, k.mode));
    (void)c->call({{"op", "time"}, {"calls", 1}}, 10);
    try {
      (void)c->call({{"op", "time"}, {"calls", 1}}, 1);
      FAIL() << "no error";
    } catch (const WorkerFailure& e) {
      EXPECT_EQ(e.kind(), k.kind);
      EXPECT_NE(std::string(e.what()).find(k.says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("fixture worker starting, mode " + k.mode), std::string::npos) << e.what();
    }
    EXPECT_FALSE(c->alive());
  }
}

// A first line of the protocol's events with fields of the wrong types is a tach::Error that names
// the field (was the JSON library's type_error, which nothing above caught).
TEST(EngineClient, AFirstLineWithFieldsOfTheWrongTypesIsAnErrorNamingThem) {
  struct Case {
    std::string line, says;
  };
  for (const Case& k : {Case{R"({"event":"unavailable","engine":"onnxruntime","missing":5})", "has missing 5"},
                        Case{R"({"event":"ready","protocol":"1","engine":"torch"})", "speaks protocol \"1\""},
                        Case{R"({"event":"ready","protocol":1,"engine":"torch","devices":"cpu"})", "has devices"},
                        Case{R"({"event":7})", "has event 7, not a string"}}) {
    SCOPED_TRACE(k.line);
    test::TempDir dir;
    EngineLaunch l;
    l.engine = "torch";
    l.command = {"sh", "-c", "echo '" + k.line + "'; sleep 30"};
    l.stderr_log = dir.file("engines/torch.log");
    l.ready_timeout_s = 30;
    try {
      (void)EngineClient::start(l);
      FAIL() << "no error";
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(k.says), std::string::npos) << e.what(); }
  }
}

// Replies decoded apart from the process: what a worker may leave out has its default; a field of
// the wrong type, a negative or missing time, a byte count past int64 are Errors naming it.
TEST(EngineReplies, DecodeOrNameWhatIsWrong) {
  using nlohmann::json;
  EXPECT_EQ(ok_reply(json{{"ok", true}, {"x", 1}}, "torch", "ping").at("x"), 1);
  EXPECT_THROW((void)ok_reply(json{{"ok", "yes"}}, "torch", "ping"), Error);
  EXPECT_THROW((void)ok_reply(json::object(), "torch", "ping"), Error);
  try {
    (void)ok_reply(json{{"ok", false}, {"kind", "oom"}, {"error", "CUDA out of memory"}}, "torch", "time");
    FAIL() << "no error";
  } catch (const EngineReplyError& e) {
    EXPECT_EQ(e.kind(), "oom");
    EXPECT_STREQ(e.what(), "torch time: CUDA out of memory (out of memory)");
  }
  EXPECT_THROW((void)ok_reply(json{{"ok", false}, {"kind", 5}}, "torch", "time"), Error);
  EXPECT_THROW((void)object_from_line(std::string(100, '[') + std::string(100, ']'), "reply"), Error);
  EXPECT_THROW((void)object_from_line("[1]", "reply"), Error);
  EXPECT_THROW((void)object_from_line("{", "reply"), Error);

  EXPECT_EQ(timed_ns(json{{"ns", {5, 6}}}, 2, "torch"), (std::vector<int64_t>{5, 6}));
  EXPECT_THROW((void)timed_ns(json{{"ns", {5}}}, 2, "torch"), Error);
  EXPECT_THROW((void)timed_ns(json{{"ns", {-1}}}, 1, "torch"), Error);
  EXPECT_THROW((void)timed_ns(json{{"ns", {"x"}}}, 1, "torch"), Error);
  EXPECT_THROW((void)timed_ns(json{{"ok", true}}, 1, "torch"), Error);

  const EngineMemory m = memory_from_reply(
      json::parse(R"({"rss_bytes":16711680,"peak_rss_bytes":2e7,"device_allocated_peak_bytes":null})"));
  EXPECT_EQ(m.rss_bytes, 16711680);
  EXPECT_EQ(m.peak_rss_bytes, 20000000);
  EXPECT_EQ(m.device_allocated_peak_bytes, -1);
  EXPECT_EQ(m.device_reserved_peak_bytes, -1);
  EXPECT_THROW((void)memory_from_reply(json{{"rss_bytes", 1e300}}), Error);
  EXPECT_THROW((void)memory_from_reply(json::parse(R"({"peak_rss_bytes":18446744073709551615})")), Error);

  const EngineLoad l = load_from_reply(
      json::parse(R"({"load_s":1.5,"setup":{"kind":"onnx export","seconds":2,"cached":true,"cache_age_s":null}})"),
      "onnxruntime");
  EXPECT_EQ(l.load_s, 1.5);
  EXPECT_EQ(l.setup_kind, "onnx export");
  EXPECT_EQ(l.setup_s, 2);
  EXPECT_TRUE(l.setup_cached);
  EXPECT_EQ(l.setup_cache_age_s, -1);
  EXPECT_THROW((void)load_from_reply(json::parse(R"({"setup":{"kind":5}})"), "torch"), Error);
  EXPECT_THROW((void)outputs_of(json{{"ok", true}}, "torch"), Error);
  EXPECT_EQ(shape_elements({2, 3}), 6);
  EXPECT_EQ(shape_elements({}), 1);
  EXPECT_EQ(shape_elements({-2, -3}), -1);
  EXPECT_EQ(shape_elements({int64_t(1) << 40, int64_t(1) << 40}), -1);  // was a signed overflow

  // A worker's claimed first call of 1e308 s leaves a finite deadline (a week), not an infinite one.
  EXPECT_EQ(request_deadline_s("time", 64, 1e308), 7 * 24 * 3600.0);
  EXPECT_EQ(request_deadline_s("time", 2, 0.5), 80);
}

TEST(EngineClient, AWorkerThatNeverSaysReadyTimesOut) {
  test::TempDir dir;
  EngineLaunch l = fixture_launch(dir, "silent");
  l.ready_timeout_s = 0.5;
  const std::string m = test::error_of([&] { (void)EngineClient::start(l); });
  EXPECT_NE(m.find("gave no first line (ready or unavailable) within 0.5 s"), std::string::npos) << m;
}

TEST(EngineClient, ALongStderrNeverBlocksTheWorker) {
  test::TempDir dir;
  auto c = EngineClient::start(fixture_launch(dir, "chatty"));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(c->call({{"op", "ping"}}, 10).at("ok"), true);  // 100 kB of stderr after each
  EXPECT_GT(fs::file_size(dir.file("engines/torch.log")), 1500000u);
}

TEST(EngineNames, UnknownOrRepeatedEnginesAreUsageErrors) {
  EXPECT_NO_THROW(check_engines({"tach", "torch", "torch-compile", "onnxruntime", "python-matmul"}, false));
  EXPECT_NE(test::error_of([] {
              check_engines({"tach", "tensorrt"}, false);
            }).find("engine 'tensorrt' is not one of tach, torch, torch-compile, onnxruntime, python-matmul"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              check_engines({"torch", "torch"}, false);
            }).find("'torch' is given twice"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { check_engines({"onnxruntime"}, true); }).find("engine onnxruntime runs inference only"),
            std::string::npos);
}

// The worker tach's Python package ships, started as tach starts it.
TEST(EngineNames, ThePythonMatmulWorkerOfTachsPackageAnswers) {
  const std::string dir = python_package_dir();
  if (dir.empty()) GTEST_SKIP() << "tach's Python package with tach/engines/ is not beside this build";
  test::TempDir tmp;
  auto c = EngineClient::start(worker_launch("python-matmul", "", tmp.file("engines/python-matmul.log")));
  EXPECT_EQ(c->ready().engine, "python-matmul");
  EXPECT_EQ(c->call({{"op", "ping"}}).at("ok"), true);
}

// ---- The engine axis of tach bench: sweeps with other engines' points.

namespace {

// A sweep of tiny points on the BERT fixture, other engines started by `python`.
BenchConfig engine_sweep(const std::string& runs_dir, const std::vector<std::string>& engines,
                         const std::string& python) {
  BenchConfig c;
  c.model = tiny_model();
  c.devices = {"cpu"};
  c.batch_sizes = {1, 2, 4};
  c.seq_lens = {8};
  c.threads = {1};
  c.warmup_runs = 0;
  c.stop.runs = 1;
  c.tensorboard = false;
  c.decode_tokens = 0;
  c.runs_dir = runs_dir;
  c.run_id = "r";
  c.engines = engines;
  c.python = python;
  return c;
}

std::string fixture_python() { return test::fixtures_dir() + "/engines/python"; }

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST(EngineSweep, AnotherEnginesPointsCarryTheirEngineAndTachsKeepTheirIds) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "ok");
  const SweepOutcome out = run_bench(engine_sweep(dir.path(), {"tach", "torch"}, fixture_python()));
  ASSERT_EQ(out.results.size(), 6u);
  std::vector<std::string> ids;
  for (const auto& p : out.results) ids.push_back(p.key.id());
  EXPECT_EQ(ids,
            (std::vector<std::string>{"cpu/f32/t1/b1/s8", "cpu/f32/t1/b2/s8", "cpu/f32/t1/b4/s8",
                                      "torch/cpu/f32/t1/b1/s8", "torch/cpu/f32/t1/b2/s8", "torch/cpu/f32/t1/b4/s8"}));
  for (const auto& p : read_run_results(out.run_dir)) {
    SCOPED_TRACE(p.key.id());
    EXPECT_EQ(p.status, "ok") << p.reason;
    EXPECT_EQ(p.measured_runs, 1);
    if (p.key.engine == "tach") continue;
    EXPECT_EQ(p.key.engine, "torch");
    EXPECT_EQ(p.threads_used, 1);
    // The stand-in answers zeros: checked against tach's logits, and they disagree.
    EXPECT_TRUE(p.engine_run.outputs_checked);
    EXPECT_FALSE(p.engine_run.outputs_agree);
    EXPECT_GT(p.engine_run.max_abs_diff, p.engine_run.tolerance);
    EXPECT_EQ(p.engine_run.task, "sequence-classification");
    EXPECT_GT(p.engine_run.ping_round_trip_us, 0);
    EXPECT_GT(p.batch_latency_ms.median, 0);
    EXPECT_EQ(p.rss_bytes, 1 << 20);
    EXPECT_EQ(p.engine_run.log, "engines/torch.log");
  }
  EXPECT_TRUE(fs::exists(out.run_dir + "/engines/torch.log"));
  // The findings: the disagreement first, then where the engine wins against tach, by how much.
  const std::string summary = summary_text(out.config, out);
  EXPECT_NE(summary.find("- torch/cpu/f32/t1/b1/s8: torch's logits DISAGREE with tach's on the same ids"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("- torch against tach: "), std::string::npos) << summary;
  EXPECT_NE(summary.find("One-time: load 0.01 s, first call 0.001 s; protocol"), std::string::npos) << summary;
  // config.json keeps the engines: a resumed run has nothing left to measure.
  const SweepOutcome again = resume_bench(out.run_dir);
  EXPECT_EQ(again.resumed_points, 6);
  EXPECT_EQ(again.config.engines, (std::vector<std::string>{"tach", "torch"}));
  EXPECT_EQ(again.config.python, fixture_python());
}

TEST(EngineSweep, AWorkerThatDiesFailsItsPointAndAFreshOneRunsTheNext) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "exit-on-time");  // its 2nd time request: exit 7
  const SweepOutcome out = run_bench(engine_sweep(dir.path(), {"torch"}, fixture_python()));
  ASSERT_EQ(out.results.size(), 3u);
  EXPECT_EQ(out.results[0].status, "ok") << out.results[0].reason;
  EXPECT_EQ(out.results[1].status, "failed");
  EXPECT_NE(out.results[1].reason.find("the worker exited (exit 7) while tach awaited reply to 'time'"),
            std::string::npos)
      << out.results[1].reason;
  EXPECT_NE(out.results[1].reason.find("fixture worker: exiting on purpose"), std::string::npos)
      << out.results[1].reason;
  EXPECT_EQ(out.results[2].status, "ok") << out.results[2].reason;
}

TEST(EngineSweep, MissingPackagesAreRefusedBeforeARunDirectoryIsMade) {
  test::TempDir dir;
  ScopedEnv mode("TACH_TEST_WORKER_MODE", "unavailable");
  const std::string m = test::error_of([&] {
    run_bench(engine_sweep(dir.path(), {"tach", "onnxruntime"}, fixture_python()));
  });
  EXPECT_NE(m.find("engine onnxruntime needs the Python packages onnxruntime, onnx"), std::string::npos) << m;
  EXPECT_NE(m.find("python3 -m pip install onnxruntime onnx"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(dir.path() + "/r/results.jsonl"));
}

TEST(EngineSweep, UnknownEnginesAndSyntheticWeightsAreUsageErrors) {
  test::TempDir dir;
  BenchConfig c = engine_sweep(dir.path(), {"tach", "tensorrt"}, "");
  EXPECT_THROW(check_sweep_config(c), UsageError);
  c.engines = {"torch"};
  c.model = "preset:bert-tiny";
  EXPECT_NE(
      test::error_of([&] { run_bench(c); }).find("preset:bert-tiny has synthetic weights, which only tach builds"),
      std::string::npos);
  c.model = tiny_model();
  c.train.enabled = true;
  EXPECT_NO_THROW(check_sweep_config(c));  // torch trains
  c.engines = {"tach", "onnxruntime"};
  EXPECT_THROW(check_sweep_config(c), UsageError);
}

// The python-matmul worker of tach's Python package, started as a user's sweep starts it.
TEST(EngineSweep, PythonMatmulPointsFromTachsOwnWorker) {
  if (python_package_dir().empty()) GTEST_SKIP() << "tach's Python package with tach/engines/ is not beside this build";
  test::TempDir dir;
  BenchConfig c = engine_sweep(dir.path(), {"tach", "python-matmul"}, "");
  c.stop.runs = 3;
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 6u);
  for (const auto& p : out.results) {
    SCOPED_TRACE(p.key.id());
    EXPECT_EQ(p.status, "ok") << p.reason;
    EXPECT_EQ(p.measured_runs, 3);
    if (p.key.engine == "tach") continue;
    // Its model is not tach's: the outputs are compared, and disagree.
    EXPECT_TRUE(p.engine_run.outputs_checked);
    EXPECT_FALSE(p.engine_run.outputs_agree);
    EXPECT_GT(p.engine_run.chunks, 0);
  }
}

// A worker loads one model in its life: a point that needs the model loaded otherwise (another
// thread count here) gets a fresh worker, not the second load's refusal.
TEST(EngineSweep, AnotherThreadCountGetsAFreshWorker) {
  if (python_package_dir().empty()) GTEST_SKIP() << "tach's Python package with tach/engines/ is not beside this build";
  test::TempDir dir;
  BenchConfig c = engine_sweep(dir.path(), {"tach", "python-matmul"}, "");
  c.batch_sizes = {1};
  c.threads = {1, 2};
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 4u);
  for (const auto& p : out.results) {
    SCOPED_TRACE(p.key.id());
    EXPECT_EQ(p.status, "ok") << p.reason;
    EXPECT_EQ(p.threads_used, p.key.threads);
  }
}

// PyTorch eager on the same weights and ids agrees with tach (development virtualenv only).
TEST(EngineSweep, TorchAgreesWithTachOnTheSameIds) {
  const char* home = std::getenv("HOME");
  const std::string py = std::getenv("TACH_REF_PYTHON") ? std::getenv("TACH_REF_PYTHON")
                         : home                         ? std::string(home) + "/tach-ref/bin/python"
                                                        : "";
  if (py.empty() || !fs::exists(py) ||
      std::system(("'" + py + "' -c 'import torch, transformers' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "needs a Python with torch and transformers (~/tach-ref, or set TACH_REF_PYTHON)";
  if (python_package_dir().empty()) GTEST_SKIP() << "tach's Python package with tach/engines/ is not beside this build";
  test::TempDir dir;
  BenchConfig c = engine_sweep(dir.path(), {"tach", "torch"}, py);
  c.batch_sizes = {2};
  c.stop.runs = 3;
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 2u);
  const PointResult& torch = out.results[1];
  EXPECT_EQ(torch.status, "ok") << torch.reason;
  EXPECT_TRUE(torch.engine_run.outputs_checked);
  EXPECT_TRUE(torch.engine_run.outputs_agree) << torch.engine_run.max_abs_diff;
  EXPECT_LT(torch.engine_run.max_abs_diff, 1e-4);
  EXPECT_NE(torch.engine_run.versions.find("torch"), std::string::npos);
}
