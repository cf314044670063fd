// What the accuracy-pass sweep tests share (test_engine_accuracy, test_task_accuracy): a
// one-point CPU sweep with --accuracy, the stand-in worker's mode set for a scope, an engine's
// pass as accuracy.json records it, and the notes a sweep gives.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "tach/bench.h"
#include "test_util.h"

namespace tach::test {

// An environment variable set while in scope (the stand-in worker's TACH_TEST_WORKER_MODE).
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  const char* name_;
};

// One point (cpu, f32, batch 1, 8 tokens, one thread, one run, no warm-up) of `model` with
// --accuracy on `dataset`, read in batches of `eval_batch_size`: the accuracy passes are what
// these tests measure, the point only the smallest a sweep can have.
inline BenchConfig one_point_accuracy_sweep(const std::string& runs_dir, const std::string& run_id,
                                            const std::string& model, const std::string& tokenizer,
                                            const std::string& dataset, int64_t eval_batch_size) {
  BenchConfig c;
  c.model = model;
  c.tokenizer = tokenizer;
  c.dataset.path = dataset;
  c.accuracy = true;
  c.eval_batch_size = eval_batch_size;
  c.devices = {"cpu"};
  c.batch_sizes = {1};
  c.seq_lens = {8};
  c.threads = {1};
  c.warmup_runs = 0;
  c.stop.runs = 1;
  c.tensorboard = false;
  c.decode_tokens = 0;
  c.runs_dir = runs_dir;
  c.run_id = run_id;
  return c;
}

// The sweep with tach's points and "torch"'s, the engine started by the stand-in worker
// (tests/fixtures/engines/python; what it answers is TACH_TEST_WORKER_MODE's).
inline BenchConfig against_stand_in_torch(BenchConfig c) {
  c.engines = {"tach", "torch"};
  c.python = fixtures_dir() + "/engines/python";
  return c;
}

// Another engine's pass as accuracy.json records it: `engine` on cpu/f32 under /venv/bin/python;
// the caller sets the task, examples and figures.
inline EngineAccuracy recorded_engine_pass(const std::string& engine, int64_t differ, double wall_s) {
  EngineAccuracy e;
  e.engine = engine, e.device = "cpu", e.dtype = "f32";
  e.differ = differ, e.wall_s = wall_s;
  e.versions = "python 3.11.7", e.python = "/venv/bin/python";
  return e;
}

// The notes a sweep gives, to see which passes ran.
struct Notes {
  std::vector<std::string> lines;
  BenchObserver observer() {
    BenchObserver o;
    o.on_note = [this](const std::string& n) { lines.push_back(n); };
    return o;
  }
  bool has(const std::string& part) const {
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) return true;
    return false;
  }
};

}  // namespace tach::test
