// The bench room: stopping rules, statistics, metrics, configs, the run store, sweeps with
// failures and resumes, throughput against an outside clock, accuracy against transformers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bench/bench_internal.h"
#include "tach/bench.h"
#include "tach/compare.h"
#include "tach/report.h"
#include "tach/runtime.h"
#include "tach/device.h"
#include "tach/report.h"
#include "test_util.h"

namespace tach {
namespace {

using test::error_of;

TEST(StoppingRule, CountRule) {
  StoppingRule r;
  r.runs = 3;
  EXPECT_EQ(bench::stop_reason(r, {1, 1}, 100), "");
  EXPECT_EQ(bench::stop_reason(r, {1, 1, 1}, 0), "count: 3 runs");
}

TEST(StoppingRule, PrecisionTimeBudgetAndBounds) {
  StoppingRule r;  // min 5, max 50, 5 s, 2%
  EXPECT_EQ(bench::stop_reason(r, {1, 1, 1, 1}, 100), "") << "never before min_runs";
  EXPECT_NE(bench::stop_reason(r, {1, 1, 1, 1, 1}, 0.1).find("precision"), std::string::npos);
  const std::vector<double> noisy{1, 2, 1, 2, 1};
  EXPECT_EQ(bench::stop_reason(r, noisy, 1), "");
  EXPECT_NE(bench::stop_reason(r, noisy, 5.5).find("time budget"), std::string::npos);
  std::vector<double> many(50);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i % 2 ? 1 : 3;
  EXPECT_NE(bench::stop_reason(r, many, 1).find("max runs: 50"), std::string::npos);
}

TEST(Statistics, DistributionMatchesNumpy) {
  // numpy.percentile([1..10], [50, 90, 95, 99]) = 5.5, 9.1, 9.55, 9.91; std(ddof=1) = 3.02765
  const Distribution d = bench::distribution({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(d.median, 5.5);
  EXPECT_NEAR(d.p90, 9.1, 1e-12);
  EXPECT_NEAR(d.p95, 9.55, 1e-12);
  EXPECT_NEAR(d.p99, 9.91, 1e-12);
  EXPECT_NEAR(d.std, 3.0276503540974917, 1e-12);
  EXPECT_EQ(d.min, 1);
  EXPECT_EQ(d.max, 10);
}

TEST(ClassificationMetrics, MatchScikitLearn) {
  // sklearn: y_true=[0,0,1,1,2,2], y_pred=[0,1,1,1,0,1]; accuracy 0.5; per class precision
  // [0.5, 0.5, 0], recall [0.5, 1, 0], f1 [0.5, 0.6667, 0]; macro-F1 0.38889.
  const AccuracyResult r = classification_metrics({0, 0, 1, 1, 2, 2}, {0, 1, 1, 1, 0, 1}, {"a", "b", "c"});
  EXPECT_DOUBLE_EQ(r.accuracy, 0.5);
  EXPECT_NEAR(r.per_class[1].f1, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.macro_f1, (0.5 + 2.0 / 3.0 + 0) / 3, 1e-12);
  EXPECT_EQ(r.confusion[2][1], 1);
  EXPECT_EQ(r.per_class[2].support, 2);
  EXPECT_NEAR(r.chance_accuracy, 1.0 / 3.0, 1e-12);
  // A label absent from both truth and predictions does not dilute macro-F1.
  const AccuracyResult r2 = classification_metrics({0, 1}, {0, 1}, {"a", "b", "c"});
  EXPECT_DOUBLE_EQ(r2.macro_f1, 1.0);
}

TEST(BenchConfig, AHubNameAloneIsReadFromTheHub) {
  // Without a local path, dataset.hf_name names the Hub dataset read (through the cache).
  const BenchConfig c = bench_config_from_yaml_text("dataset:\n  hf_name: glue/sst2\n  split: validation\n", "c.yaml");
  EXPECT_EQ(c.dataset.path, "hf://datasets/nyu-mll/glue/sst2");
  EXPECT_EQ(c.dataset.split, "validation");
  EXPECT_EQ(bench_config_from_yaml_text("dataset:\n  hf_name: org/name\n", "c.yaml").dataset.path,
            "hf://datasets/org/name");
  EXPECT_NE(test::error_of([] {
              bench_config_from_yaml_text("dataset:\n  hf_name: ../x\n", "c.yaml");
            }).find("dataset.hf_name: '../x' is not a Hub dataset name"),
            std::string::npos);
}

TEST(BenchConfig, YamlInTheShapeBenchmarkSuitesUse) {
  test::TempDir dir;
  test::write_text(dir.file("c.yaml"), R"(model:
  name: preset:bert-tiny
  device: cpu
  dtype: float32
dataset:
  hf_name: codefactory4791/amazon_test
  local_path: ./data/val_df.csv
  split: test
  sample_sizes: [100, 500, 1000]
profiling:
  batch_sizes: [1, 4, 8]
  num_warmup_runs: 3
  num_measurement_runs: 10
  max_length: 256
  decode_tokens: 12
)");
  const BenchConfig c = bench_config_from_yaml(dir.file("c.yaml"));
  EXPECT_EQ(c.model, "preset:bert-tiny");
  EXPECT_EQ(c.dtypes, std::vector<std::string>{"f32"});
  EXPECT_EQ(c.dataset.path, "./data/val_df.csv");
  EXPECT_EQ(c.sample_sizes, (std::vector<int64_t>{100, 500, 1000}));
  EXPECT_EQ(c.batch_sizes, (std::vector<int64_t>{1, 4, 8}));
  EXPECT_EQ(c.warmup_runs, 3);
  EXPECT_EQ(c.stop.runs, 10);
  EXPECT_EQ(c.seq_lens, std::vector<int64_t>{256});
  EXPECT_EQ(c.decode_tokens, 12);
  // Round trip through config.json (what --resume reads).
  const BenchConfig back = bench_config_from_json(bench_config_to_json(c), "config.json");
  EXPECT_EQ(bench_config_to_json(back), bench_config_to_json(c));
  EXPECT_EQ(back.decode_tokens, 12);
}

TEST(BenchConfig, BadYamlGetsClearErrors) {
  test::TempDir dir;
  test::write_text(dir.file("t.yaml"), "profiling:\n  batch_sizes: [1, many]\n");
  EXPECT_NE(error_of([&] {
              bench_config_from_yaml(dir.file("t.yaml"));
            }).find("profiling.batch_sizes[1]: expected an integer (line 2)"),
            std::string::npos);
  test::write_text(dir.file("k.yaml"), "profiling:\n  batch_size: 4\n");
  EXPECT_NE(error_of([&] { bench_config_from_yaml(dir.file("k.yaml")); }).find("profiling.batch_size: unknown key"),
            std::string::npos);
  test::write_text(dir.file("s.yaml"), "model: [unclosed\n");
  EXPECT_NE(error_of([&] { bench_config_from_yaml(dir.file("s.yaml")); }).find("not valid YAML"), std::string::npos);
  test::write_text(dir.file("d.yaml"), "model:\n  dtype: int3\n");
  EXPECT_NE(error_of([&] { bench_config_from_yaml(dir.file("d.yaml")); }).find("dtype 'int3' is not one of"),
            std::string::npos);
}

BenchConfig tiny_config(const std::string& runs_dir) {
  BenchConfig c;
  c.model = "preset:bert-tiny";
  c.devices = {"cpu"};  // the point ids below name the CPU, on a machine with a GPU too
  c.batch_sizes = {1, 2};
  c.seq_lens = {8, 4096};  // 4096 is past bert-tiny's 512 positions: those points must fail, not stop the sweep
  c.warmup_runs = 1;
  c.stop.runs = 3;
  c.runs_dir = runs_dir;
  c.run_id = "r";
  return c;
}

TEST(Sweep, FailedPointsAreRecordedAndTheSweepGoesOn) {
  test::TempDir dir;
  const SweepOutcome out = run_bench(tiny_config(dir.path()));
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_EQ(out.results[0].status, "ok");
  EXPECT_EQ(out.results[0].measured_runs, 3);
  // On a busy machine the rule's words go on with the point's contention (test_contention).
  EXPECT_EQ(out.results[0].stopped_by.rfind("count: 3 runs", 0), 0u) << out.results[0].stopped_by;
  EXPECT_GT(out.results[1].samples_per_s, 0);
  EXPECT_EQ(out.results[2].status, "failed");
  EXPECT_NE(out.results[2].reason.find("longer than the model's 512 positions"), std::string::npos);
  // results.jsonl holds every point, one line each.
  std::ifstream in(dir.path() + "/r/results.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    const PointResult p = point_from_json(line, "results.jsonl");
    EXPECT_EQ(point_to_json(p), line);  // lossless round trip
    ++lines;
  }
  EXPECT_EQ(lines, 4);
  // Every measured run's latency is kept, in order, and the summary is theirs.
  ASSERT_EQ(out.results[0].batch_latency_samples_ms.size(), 3u);
  const auto& raw = out.results[0].batch_latency_samples_ms;
  EXPECT_DOUBLE_EQ(*std::min_element(raw.begin(), raw.end()), out.results[0].batch_latency_ms.min);
  // A line written before the raw latencies were kept (schema /1) still reads, without them.
  {
    std::ifstream again(dir.path() + "/r/results.jsonl");
    std::getline(again, line);
    auto j = nlohmann::json::parse(line);
    j["schema"] = "tach.bench.point/1";
    j.erase("batch_latency_samples_ms");
    const PointResult old = point_from_json(j.dump(), "old results.jsonl");
    EXPECT_TRUE(old.batch_latency_samples_ms.empty());
    EXPECT_EQ(old.batch_latency_ms.n, 3);
    // Lines written before the CUDA backend have no GPU fields: read as "none".
    j = nlohmann::json::parse(line);
    j.erase("gpu_time_ms");
    j["memory"].erase("device_memory_used_bytes");
    const PointResult before_gpu = point_from_json(j.dump(), "older results.jsonl");
    EXPECT_EQ(before_gpu.gpu_time_ms.n, 0);
    EXPECT_EQ(before_gpu.device_memory_used_bytes, -1);
    // A line written before threads_requested holds the count asked for in threads.
    j = nlohmann::json::parse(line);
    j.erase("threads_requested");
    j["threads"] = 0;
    const PointResult before_used = point_from_json(j.dump(), "older results.jsonl");
    EXPECT_EQ(before_used.key.threads, 0);
    EXPECT_EQ(before_used.threads_used, 0);
    EXPECT_EQ(threads_label(before_used), "default");
  }
  // Each point records the threads it ran with beside the count asked for (0: the default).
  EXPECT_EQ(out.results[0].key.threads, 0);
  EXPECT_EQ(out.results[0].threads_used, threads());
  EXPECT_EQ(threads_label(out.results[0]), std::to_string(threads()) + " (default)");
  // A CPU point has no GPU time and no driver figure.
  EXPECT_EQ(out.results[0].gpu_time_ms.n, 0);
  EXPECT_EQ(out.results[0].device_memory_used_bytes, -1);
  // The memory fields are filled from the allocator and procfs.
  EXPECT_GT(out.results[0].allocator.at("weights").current, 0);
  EXPECT_GT(out.results[0].peak_rss_bytes, 0);
  write_run_reports(out.config, out);
  for (const char* f : {"summary.json", "summary.txt", "detailed_metrics.csv", "config.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/r/" + f)) << f;
  EXPECT_NE(test::read_text(dir.path() + "/r/summary.txt").find("failed: sequence length 4096"), std::string::npos);
}

// A causal LM's points: the prefill's timing, then greedy decoding of decode_tokens new tokens with
// its bandwidth limit; what does not fit the model's positions says so; a round trip through
// results.jsonl keeps it, and the tables and the report show it. max_position_embeddings is 64.
TEST(Sweep, CausalLmPointsTimeDecodingAgainstItsBandwidthLimit) {
  test::TempDir dir;
  BenchConfig c = tiny_config(dir.path());
  c.model = test::fixtures_dir() + "/decoders/qwen2-lm-kv4-untied-f32";
  c.batch_sizes = {2};
  c.seq_lens = {8, 60};  // 60 + 8 new tokens pass the 64 positions: prefill only
  c.decode_tokens = 8;
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.size(), 2u);
  const PointResult& p = out.results[0];
  ASSERT_EQ(p.status, "ok") << p.reason;
  const PointResult::Decode& d = p.decode;
  EXPECT_EQ(d.step_ms.n, 7);  // the first of the 8 tokens is the prefill's
  EXPECT_GT(d.step_ms.median, 0);
  EXPECT_NEAR(d.tokens_per_s, 2 * 1e3 / d.step_ms.median, 1e-9 * d.tokens_per_s) << "rows over the median step";
  EXPECT_GT(d.weight_bytes_per_step, 0);
  EXPECT_GT(d.cache_bytes_per_step, 0);
  EXPECT_GT(d.memory_bytes_per_s, 0);
  EXPECT_NEAR(d.limit_ms, (d.weight_bytes_per_step + d.cache_bytes_per_step) / d.memory_bytes_per_s * 1e3,
              1e-9 * d.limit_ms);
  EXPECT_NEAR(d.fraction_of_limit, d.limit_ms / d.step_ms.median, 1e-9);
  EXPECT_NE(d.method.find("kernel by kernel"), std::string::npos) << d.method;
  EXPECT_FALSE(d.bandwidth_method.empty());
  const PointResult& too_long = out.results[1];
  EXPECT_EQ(too_long.status, "ok");  // the prefill still ran
  EXPECT_EQ(too_long.decode.step_ms.n, 0);
  EXPECT_NE(too_long.decode.method.find("exceed the model's 64 positions"), std::string::npos)
      << too_long.decode.method;
  std::ifstream in(dir.path() + "/r/results.jsonl");
  std::string line;
  while (std::getline(in, line)) EXPECT_EQ(point_to_json(point_from_json(line, "results.jsonl")), line);
  const std::string table = results_table(out.results, "table", "m");
  EXPECT_NE(table.find("decode ms/step"), std::string::npos) << table;
  // Every markdown row has the header's cells, a failed point's too.
  std::vector<PointResult> with_failure = out.results;
  with_failure.push_back(out.results[0]);
  with_failure.back().status = "failed", with_failure.back().reason = "out of memory";
  std::istringstream md(results_table(with_failure, "md", "m"));
  std::string md_line;
  std::set<long> cells;
  while (std::getline(md, md_line))
    if (!md_line.empty()) cells.insert(std::count(md_line.begin(), md_line.end(), '|'));
  EXPECT_EQ(cells.size(), 1u) << results_table(with_failure, "md", "m");
  EXPECT_NE(results_table(out.results, "csv", "m").find("decode_median_fraction_of_limit"), std::string::npos);
  write_run_reports(out.config, out);
  const std::string html = run_report_html(dir.path() + "/r");
  EXPECT_NE(html.find("<h3>Decoding</h3>"), std::string::npos);
  EXPECT_NE(html.find("64 positions"), std::string::npos);  // the reason, escaped
  // tach compare sets the decode steps of two runs side by side as a point of their own.
  c.run_id = "again";
  (void)run_bench(c);
  const RunComparison cmp = compare_runs({dir.path() + "/r", dir.path() + "/again"});
  // Points meet by the threads they ran with: the default's count, not t0.
  const std::string decode_id = "cpu/f32/t" + std::to_string(p.threads_used) + "/b2/s8 decode";
  const auto decode_row =
      std::find_if(cmp.changes.begin(), cmp.changes.end(), [&](const PointChange& ch) { return ch.id == decode_id; });
  ASSERT_NE(decode_row, cmp.changes.end()) << comparison_text(cmp, "table");
  EXPECT_EQ(decode_row->baseline_n, 7);
  EXPECT_EQ(decode_row->n, 7);
  EXPECT_NE(decode_row->verdict, "not comparable") << decode_row->why;
  EXPECT_NEAR(decode_row->baseline_median_ms, d.step_ms.median, 1e-12);
  EXPECT_NE(comparison_html(cmp).find("decode step (ms)"), std::string::npos);
  EXPECT_EQ(std::count_if(cmp.changes.begin(), cmp.changes.end(),
                          [](const PointChange& ch) { return ch.id.find("s60 decode") != std::string::npos; }),
            0);  // that point never decoded
  // decode_tokens 0: prefill only, nothing recorded; an encoder never decodes.
  c.decode_tokens = 0;
  c.seq_lens = {8};
  c.run_id = "prefill";
  EXPECT_TRUE(run_bench(c).results[0].decode.method.empty());
  EXPECT_TRUE(run_bench(tiny_config(dir.path() + "/enc")).results[0].decode.method.empty());
  c.decode_tokens = -1;
  c.run_id = "bad";
  EXPECT_NE(error_of([&] { run_bench(c); }).find("--decode-tokens"), std::string::npos);
}

TEST(Sweep, ResumeKeepsFinishedPointsAndCutsATornLine) {
  test::TempDir dir;
  const SweepOutcome full = run_bench(tiny_config(dir.path()));
  // Keep two finished lines and a torn third, as a kill during a write leaves them.
  const std::string path = dir.path() + "/r/results.jsonl";
  std::string text = test::read_text(path);
  size_t second_end = text.find('\n', text.find('\n') + 1);
  test::write_text(path, text.substr(0, second_end + 1) + text.substr(second_end + 1, 40));
  const SweepOutcome resumed = resume_bench(dir.path() + "/r");
  EXPECT_EQ(resumed.resumed_points, 2);
  ASSERT_EQ(resumed.results.size(), full.results.size());
  for (size_t i = 0; i < full.results.size(); ++i) {
    EXPECT_EQ(resumed.results[i].key.id(), full.results[i].key.id());
    EXPECT_EQ(resumed.results[i].status, full.results[i].status);
  }
  EXPECT_EQ(resumed.results[0].finished_at, full.results[0].finished_at) << "kept, not rerun";
  ASSERT_FALSE(resumed.notes.empty());
  EXPECT_NE(resumed.notes[0].find("torn line"), std::string::npos);
  // A second run into the same directory is refused rather than mixed in.
  EXPECT_NE(error_of([&] { run_bench(tiny_config(dir.path())); }).find("already holds a run"), std::string::npos);
}

// Two runs started at once under one --run-id: the one that holds the directory runs, the other is
// refused (before, both could pass the "holds a run" check and mix their files).
TEST(RunStore, ADirectoryHeldByAnotherRunIsRefused) {
  test::TempDir dir;
  const std::string run = dir.path() + "/race";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // holds the directory as a run in progress does, then waits to be killed
    (void)bench::RunStore::create(run, BenchConfig{});
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  // config.json is there now, as the other run wrote it at its start: without the hold, a second
  // run would take it for a failed start and write its own.
  EXPECT_NE(error_of([&] { (void)bench::RunStore::create(run, BenchConfig{}); }).find("in use by another tach run"),
            std::string::npos);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  // Its holder gone, the directory is what it holds: a start that failed, taken afresh.
  EXPECT_NO_THROW((void)bench::RunStore::create(run, BenchConfig{}));
}

// Ctrl-C (a stop request) ends the sweep between points, with what finished kept; it resumes.
TEST(Sweep, AStopRequestEndsBetweenPointsAndTheRunResumes) {
  test::TempDir dir;
  BenchObserver observer;
  observer.on_point_done = [](const PointResult&, size_t index, size_t) {
    if (index == 0) request_stop();  // as the SIGINT handler does, while point 1 is in flight
  };
  const std::string message = error_of([&] { run_bench(tiny_config(dir.path()), observer); });
  clear_stop_request();
  EXPECT_NE(message.find("stopped before point 2 of 4"), std::string::npos) << message;
  EXPECT_NE(message.find("tach bench --resume " + dir.path() + "/r"), std::string::npos) << message;
  EXPECT_EQ(test::read_text(dir.path() + "/r/results.jsonl").find('\n') + 1,
            test::read_text(dir.path() + "/r/results.jsonl").size())
      << "one point finished, one line";
  const SweepOutcome resumed = resume_bench(dir.path() + "/r");
  EXPECT_EQ(resumed.resumed_points, 1);
  EXPECT_EQ(resumed.results.size(), 4u);
  EXPECT_FALSE(in_stop_scope()) << "the sweep's scope ends with it";
}

// --profile: a trace per point, written after (never during) the point's measured runs.
TEST(Sweep, ProfileWritesATracePerPoint) {
  test::TempDir dir;
  BenchConfig c = tiny_config(dir.path());
  c.seq_lens = {8};
  c.batch_sizes = {1};
  c.profile = true;
  const SweepOutcome out = run_bench(c);
  ASSERT_EQ(out.results.at(0).status, "ok");
  const std::string traces = dir.path() + "/r/traces/cpu_f32_t0_b1_s8/";
  for (const char* f : {"trace.json", "ops_by_op.csv", "ops_by_module.csv", "stacks.txt"})
    EXPECT_TRUE(std::filesystem::exists(traces + f)) << f;
  EXPECT_NE(test::read_text(traces + "ops_by_op.csv").find("linear,"), std::string::npos);
}

TEST(Sweep, BadConfigurationsAreErrors) {
  test::TempDir dir;
  BenchConfig c = tiny_config(dir.path());
  c.batch_sizes = {0};
  EXPECT_NE(error_of([&] { run_bench(c); }).find("batch size 0: batch sizes must be positive"), std::string::npos);
  c = tiny_config(dir.path());
  c.input = "dataset";
  EXPECT_NE(error_of([&] { run_bench(c); }).find("--input dataset needs --dataset"), std::string::npos);
  c = tiny_config(dir.path());
  c.devices = {"tpu"};
  EXPECT_NE(error_of([&] { run_bench(c); }).find("unknown device 'tpu'"), std::string::npos);
  if (!cuda_available()) {
    c.devices = {"cuda"};
    EXPECT_NE(error_of([&] { run_bench(c); }).find("device cuda: no CUDA device here"), std::string::npos);
  }
  // Quantized dtypes are inference: refused for training sweeps, before any point.
  c = tiny_config(dir.path());
  c.dtypes = {"f32", "int4"};
  EXPECT_NE(error_of([&] { run_bench(c); }).find("dtype 'int4' is not one of f32, bf16, f16, int8, nf4"),
            std::string::npos);
  c.dtypes = {"nf4"};
  c.train.enabled = true;
  EXPECT_NE(error_of([&] { run_bench(c); }).find("dtype nf4 quantizes inference forwards"), std::string::npos);
  // A GPU runs them too (weight-only): a cuda point is refused only for want of a GPU.
  c = tiny_config(dir.path());
  c.dtypes = {"int8"};
  c.devices = {"cpu", "cuda"};
  if (!cuda_available())
    EXPECT_NE(error_of([&] { run_bench(c); }).find("device cuda: no CUDA device here"), std::string::npos);
}

// A sweep of f32 alone is told about the narrower dtypes; one that tried any is not.
TEST(Sweep, NextStepsSuggestANarrowerDtypeOnlyOnce) {
  BenchConfig c;
  SweepOutcome o;
  c.dtypes = {"f32"};
  EXPECT_NE(summary_text(c, o).find("Try --dtype f32,bf16 (or int8, nf4)"), std::string::npos);
  c.dtypes = {"f32", "int8"};
  EXPECT_EQ(summary_text(c, o).find("Try --dtype"), std::string::npos);
}

// The bench's default device: the first GPU when one is usable (forwards), else the CPU, said in
// the run's first note; config.json keeps what it resolved to. A training sweep's auto is the CPU.
TEST(Sweep, DeviceAutoPicksAndSaysWhich) {
  test::TempDir dir;
  BenchConfig c = tiny_config(dir.path());
  c.devices = {"auto"};
  c.seq_lens = {8};
  c.batch_sizes = {1};
  const SweepOutcome out = run_bench(c);
  const std::string want = cuda_available() ? "cuda:0" : "cpu";
  ASSERT_FALSE(out.notes.empty());
  EXPECT_EQ(out.notes.front().rfind("device auto: " + want + " (", 0), 0u) << out.notes.front();
  EXPECT_EQ(out.config.devices, std::vector<std::string>{want});
  EXPECT_EQ(out.results.at(0).key.device, want);
  const auto saved = nlohmann::json::parse(test::read_text(dir.path() + "/r/config.json"));
  EXPECT_EQ(saved["devices"], nlohmann::json::array({want}));
}

// GPU energy: NVML's counter moves in steps, so the energy per forward is measured between two
// steps. A counter that steps by 1 J every 10 forwards must give 0.1 J per forward, whatever the
// window; one that never moves or cannot be read is "unavailable", with the reason.
TEST(GpuEnergy, PerRunEnergyBetweenTwoStepsOfTheCounter) {
  int64_t forwards = 0;
  const auto stepping = [&] { return 1000.0 + std::floor(double(forwards) / 10); };  // whole joules
  const bench::GpuEnergy e = bench::measure_energy_per_run(
      stepping, [&] { ++forwards; }, 0.02);
  ASSERT_GT(e.runs, 0) << e.source;
  EXPECT_EQ(e.runs % 10, 0) << "from one step to another: whole steps of 10 forwards";
  EXPECT_DOUBLE_EQ(e.j_per_run, 0.1);
  EXPECT_GE(e.window_s, 0.02);
  EXPECT_GT(e.mean_power_w, 0);
  const bench::GpuEnergy stuck = bench::measure_energy_per_run([] { return 5.0; }, [] {}, 0.01, 0.05);
  EXPECT_LT(stuck.j_per_run, 0);
  EXPECT_NE(stuck.source.find("did not move"), std::string::npos) << stuck.source;
  const bench::GpuEnergy absent = bench::measure_energy_per_run([] { return -1.0; }, [] {}, 0.01, 0.05);
  EXPECT_NE(absent.source.find("unavailable: NVML has no total-energy counter"), std::string::npos) << absent.source;
}

// A GPU training point's energy: the counter read after each measured step, the energy per step
// between the first and last steps of the counter those steps saw. Steps enough need no more;
// too few get more steps after them to close the window, and say how many.
TEST(GpuEnergy, TrainingStepsEnergyOverTheMeasuredSteps) {
  int64_t steps_done = 0;
  const auto stepping = [&] { return 50.0 + std::floor(double(steps_done) / 4); };  // 1 J every 4 steps
  bench::EnergyCounterSteps measured(stepping);
  for (int i = 0; i < 21; ++i) {
    ++steps_done;
    ASSERT_TRUE(measured.read_after_run());
  }
  EXPECT_EQ(measured.steps(), 5);  // at steps 4, 8, 12, 16, 20
  int64_t extra = 0;
  const bench::GpuEnergy enough = bench::finish_energy_window(
      measured, [&] { ++steps_done, ++extra; }, 0.0);
  EXPECT_EQ(extra, 0) << "the measured steps spanned the window: no step added";
  EXPECT_EQ(enough.added_runs, 0);
  EXPECT_EQ(enough.runs, 16) << "from the step at 4 to the one at 20";
  EXPECT_DOUBLE_EQ(enough.j_per_run, 0.25);

  steps_done = 0;
  bench::EnergyCounterSteps short_run(stepping);
  for (int i = 0; i < 3; ++i) ++steps_done, short_run.read_after_run();  // no step of the counter
  const bench::GpuEnergy closed = bench::finish_energy_window(
      short_run, [&] { ++steps_done; }, 0.0);
  EXPECT_GT(closed.added_runs, 0) << closed.source;
  EXPECT_EQ(closed.runs % 4, 0);
  EXPECT_DOUBLE_EQ(closed.j_per_run, 0.25);

  bench::EnergyCounterSteps unreadable([] { return -1.0; });
  EXPECT_FALSE(unreadable.readable());
  EXPECT_NE(bench::finish_energy_window(
                unreadable, [] {}, 0.0)
                .source.find("unavailable"),
            std::string::npos);
}

// The record a GPU point keeps of its NVML energy: one method text for an engine's worker calls
// and tach's training steps, word for word what results files and docs/formats.md show, the total
// over the measured runs, and the reason where there is none.
TEST(GpuEnergy, RecordNamesTheRunsItCounts) {
  bench::GpuEnergy e;
  e.j_per_run = 0.5, e.mean_power_w = 251.4, e.window_s = 1.234, e.runs = 40;
  const bench::NvmlEnergyRecord calls = bench::nvml_energy_record(e, bench::EnergyRuns::worker_calls, 30, "unused");
  EXPECT_DOUBLE_EQ(calls.j, 15.0);
  EXPECT_EQ(calls.source,
            "NVML total energy of the GPU, whole board, over the worker's measured calls: 40 calls between two steps "
            "of the counter 1.23 s apart (mean power 251 W; tach reads the counter between chunks of calls, so each "
            "end is placed to within a chunk)");
  e.added_runs = 7;
  const bench::NvmlEnergyRecord steps = bench::nvml_energy_record(e, bench::EnergyRuns::training_steps, 12, "unused");
  EXPECT_DOUBLE_EQ(steps.j, 6.0);
  EXPECT_EQ(steps.source,
            "NVML total energy of the GPU, whole board, over the measured steps: 40 steps between two steps of the "
            "counter 1.23 s apart (mean power 251 W); 7 more steps run after them to span the window; j is that "
            "energy per step times the 12 measured steps");
  EXPECT_NE(bench::nvml_energy_record(e, bench::EnergyRuns::worker_calls, 3, "")
                .source.find("; 7 more calls run after them to span the window"),
            std::string::npos);

  // No counter read (--energy-window 0, or NVML absent): the caller's reason; a window that
  // failed: its own.
  const bench::NvmlEnergyRecord off =
      bench::nvml_energy_record(bench::GpuEnergy{}, bench::EnergyRuns::training_steps, 12, bench::kEnergyWindowOff);
  EXPECT_LT(off.j, 0);
  EXPECT_EQ(off.source, "not measured (--energy-window 0)");
  bench::GpuEnergy stuck;
  stuck.source = "unavailable: NVML's energy counter did not move in 2 s";
  const bench::NvmlEnergyRecord failed =
      bench::nvml_energy_record(stuck, bench::EnergyRuns::worker_calls, 30, bench::kEnergyWindowOff);
  EXPECT_LT(failed.j, 0);
  EXPECT_EQ(failed.source, stuck.source);
}

TEST(Sweep, BadEnergyWindowIsAnError) {
  test::TempDir dir;
  BenchConfig c = tiny_config(dir.path());
  c.gpu_energy_window_s = -1;
  EXPECT_NE(error_of([&] { run_bench(c); }).find("--energy-window must be 0"), std::string::npos);
}

// The measured runs' summed latencies must agree with an outside clock around them, and the
// throughput tach reports is the batch over their median (one definition, kThroughputDefinition).
// The time between runs (the stopping rule, the load sample) is outside the latencies but inside
// the outside clock, and on a busy machine the process is also descheduled there: one sweep whose
// gap is small passes, up to three are run, and if every one was measured under contention the
// comparison is skipped with the reason (a quiet machine keeps it).
TEST(Sweep, ThroughputAgreesWithAnExternalClock) {
  std::string tries;
  bool every_try_contended = true;
  for (int attempt = 0; attempt < 3; ++attempt) {
    test::TempDir dir;
    BenchConfig c = tiny_config(dir.path());
    c.batch_sizes = {4};
    c.seq_lens = {64};
    c.stop.runs = 40;
    std::chrono::steady_clock::time_point t0, t1;
    int64_t samples = 0;
    BenchObserver obs;
    obs.on_measure_begin = [&](const PointKey&) { t0 = std::chrono::steady_clock::now(); };
    obs.on_measure_end = [&](const PointKey&, int64_t n) {
      t1 = std::chrono::steady_clock::now();
      samples = n;
    };
    const SweepOutcome out = run_bench(c, obs);
    ASSERT_EQ(out.results.at(0).status, "ok");
    const double external = double(samples) / std::chrono::duration<double>(t1 - t0).count();
    ASSERT_EQ(samples, 160);
    const PointResult& p = out.results[0];
    EXPECT_DOUBLE_EQ(p.samples_per_s, 4 * 1e3 / p.batch_latency_ms.median);
    EXPECT_DOUBLE_EQ(p.tokens_per_s, p.real_tokens_per_batch * 1e3 / p.batch_latency_ms.median);
    const double summed_s = p.batch_latency_ms.mean * double(p.measured_runs) / 1e3;
    const double ratio = double(samples) / summed_s / external;
    if (std::fabs(ratio - 1.0) <= 0.03) return;
    every_try_contended = every_try_contended && p.load.contended;
    tries += " " + std::to_string(ratio) + (p.load.contended ? " (contended)" : "");
  }
  if (every_try_contended)
    GTEST_SKIP() << "needs a quiet machine: every sweep was measured under contention, and the summed latencies "
                    "over the outside clock were"
                 << tries;
  ADD_FAILURE() << "the summed latencies over the outside clock were" << tries << " in three sweeps (want within 3%)";
}

// The small DistilBERT fine-tuned on SST-2 (tests/fixtures) and its tokenizer.
BenchConfig sst2_classifier_config() {
  BenchConfig c;
  c.model = test::fixtures_dir() + "/encoders/distilbert-sst2-tiny";
  c.tokenizer = test::shared_dir() + "/tokenizers/bert-base-uncased";
  return c;
}

// A real (trained) model on the real SST-2 dev split: accuracy and every prediction as transformers.
TEST(Accuracy, Sst2FixtureMatchesTransformers) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared is absent";
  test::TempDir dir;
  BenchConfig c = sst2_classifier_config();
  c.dataset.path = test::shared_dir() + "/data/sst2/dev.tsv";
  c.runs_dir = dir.path();
  c.run_id = "eval";
  c.seed = 0;
  const SweepOutcome out = run_eval(c);
  ASSERT_EQ(out.accuracy.size(), 1u);
  const auto expected = nlohmann::json::parse(test::read_text(c.model + "/expected.json"));
  const AccuracyResult& r = out.accuracy[0];
  EXPECT_EQ(r.examples, 872);
  // bf16 weights computed in f32 by both; a near-tie may flip one prediction.
  EXPECT_NEAR(r.accuracy, expected["accuracy"].get<double>(), 1.5 / 872);
  EXPECT_GT(r.accuracy, 0.7) << "a trained model, far from chance";
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/eval/accuracy.json"));
  // Sample sizes are prefixes of the seeded shuffle.
  c.run_id = "sizes";
  c.sample_sizes = {100, 500};
  const SweepOutcome sized = run_eval(c);
  ASSERT_EQ(sized.accuracy.size(), 2u);
  EXPECT_EQ(sized.accuracy[0].examples, 100);
  EXPECT_EQ(sized.accuracy[1].examples, 500);
}

// --dtype f32,int8: one accuracy pass per dtype, side by side, and int8 costs little accuracy
// on a trained model.
TEST(Accuracy, Int8BesideF32OnATrainedModel) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared is absent";
  test::TempDir dir;
  BenchConfig c = sst2_classifier_config();
  c.dataset.path = test::shared_dir() + "/data/sst2/dev.tsv";
  c.dtypes = {"f32", "int8"};
  c.runs_dir = dir.path();
  c.run_id = "eval";
  const SweepOutcome out = run_eval(c);
  ASSERT_EQ(out.accuracy.size(), 2u);
  EXPECT_EQ(out.accuracy[0].dtype, "f32");
  EXPECT_EQ(out.accuracy[1].dtype, "int8");
  EXPECT_EQ(out.accuracy[1].device, "cpu");
  EXPECT_NEAR(out.accuracy[1].accuracy, out.accuracy[0].accuracy, 0.02) << "int8 within 2 points of f32";
  // Read back from accuracy.json as written.
  std::string dataset;
  const auto back = accuracy_from_json(test::read_text(dir.path() + "/eval/accuracy.json"), "accuracy.json", &dataset);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].dtype, "int8");
  EXPECT_EQ(back[1].accuracy, out.accuracy[1].accuracy);
}

TEST(Accuracy, UnknownLabelsStopTheRunBeforeMeasuring) {
  if (!test::shared_available()) GTEST_SKIP() << "../shared is absent";
  test::TempDir dir;
  BenchConfig c = sst2_classifier_config();
  c.dataset.path = test::shared_dir() + "/data/agnews/test.tsv";
  c.dataset.text_column = "0";
  c.dataset.label_column = "1";
  c.runs_dir = dir.path();
  const std::string e = error_of([&] { run_eval(c); });
  EXPECT_NE(e.find("labels the model does not know: 'Business' (1900x)"), std::string::npos) << e;
  EXPECT_NE(e.find("0=negative, 1=positive"), std::string::npos) << e;
}

// Found by fuzz_bench_config: text that is not UTF-8 must be an error for config.json (which must
// reproduce the run exactly) and replaced, not fatal, in results (reasons quote paths).
TEST(BenchConfig, InvalidUtf8IsAClearErrorNotACrash) {
  BenchConfig c;
  c.model = "preset:bert-ti\x92\x86";
  EXPECT_NE(error_of([&] { bench_config_to_json(c); }).find("not valid UTF-8"), std::string::npos);
  PointResult p;
  p.status = "failed";
  p.reason = "model /tmp/\xff not found";
  EXPECT_NO_THROW(point_to_json(p));
}

TEST(Reports, TablesInEveryFormat) {
  PointResult p;
  p.key.batch = 8;
  p.batch_latency_ms.median = 12.5;
  p.samples_per_s = 640;
  const std::vector<PointResult> v{p};
  EXPECT_NE(results_table(v, "md", "m").find("| m "), std::string::npos);
  EXPECT_NE(results_table(v, "md", "m").find("---:"), std::string::npos);
  EXPECT_NE(results_table(v, "csv").find("cpu/f32/t0/b8/s128"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(results_table(v, "json")).size(), 1u);
  EXPECT_EQ(results_table(v, "jsonl"), point_to_json(p) + "\n");
  EXPECT_NE(error_of([&] { results_table(v, "xml"); }).find("not one of"), std::string::npos);
  EXPECT_EQ(results_table(v, "table").find("GPU ms"), std::string::npos) << "no GPU column without a GPU point";
}

// A GPU point's table shows its GPU time beside the host's latency and its energy per sample;
// the CSV gains the GPU time's distribution and the driver's memory.
TEST(Reports, GpuPointsShowGpuTimeAndEnergy) {
  PointResult p;
  p.key.device = "cuda:0";
  p.key.batch = 8;
  p.status = "ok";
  p.batch_latency_ms.median = 2.5;
  p.gpu_time_ms.n = 5;
  p.gpu_time_ms.median = 2.25;
  p.energy_j = 1.0;
  p.energy_j_per_sample = 0.0375;
  p.device_memory_used_bytes = 123456;
  const std::string t = results_table({p}, "table");
  EXPECT_NE(t.find("GPU ms med"), std::string::npos) << t;
  EXPECT_NE(t.find("2.25"), std::string::npos) << t;
  EXPECT_NE(t.find("mJ/sample"), std::string::npos) << t;
  EXPECT_NE(t.find("37.5"), std::string::npos) << t;
  const std::string csv = results_table({p}, "csv");
  EXPECT_NE(csv.find("gpu_time_ms_median"), std::string::npos);
  EXPECT_NE(csv.find(",123456,"), std::string::npos);
  EXPECT_NE(csv.find("energy_j_per_sample"), std::string::npos);
}

}  // namespace
}  // namespace tach
