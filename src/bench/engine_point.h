// Points of another engine (tach bench --engine): one worker process per engine for the sweep,
// fed the token ids tach's tokenizer makes for the point, its outputs checked against tach's own
// before timing, then timed under tach's stopping rule in chunks of calls the worker times itself.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_internal.h"
#include "engines/engine_protocol.h"

namespace tach::bench {

// Before anything runs: usage errors for engines a sweep cannot use (a model without a directory of
// weights: a preset's synthetic ones), then each worker engine started once and asked for its
// ready line, so that missing packages are refused by name with their pip command.
void check_engines_available(const BenchConfig& config);

class EngineWorkers {
 public:
  EngineWorkers(const BenchConfig& config, std::string run_dir) : config_(config), run_dir_(std::move(run_dir)) {}
  // key.engine's point. tach_model: tach's model for the point's device and dtype (its ModelInfo
  // makes the inputs, its outputs are the reference). threads: the count the point runs with.
  // Never throws for a worker's failure: the point fails with the reason and the worker's last
  // stderr lines, and the next point starts a fresh worker.
  PointResult run_point(const EncoderModel& tach_model, const PointKey& key, const TextSource* texts, int threads,
                        const BenchObserver& observer);

 private:
  struct Worker {
    std::unique_ptr<engines::EngineClient> client;
    std::string loaded;  // device/dtype/threads of the model it holds ("" none)
    nlohmann::json load_reply;
    double ping_us = 0;
  };
  Worker& started(const std::string& engine);
  void measure(Worker& w, const EncoderModel& tach_model, const PointKey& key, const TokenBatch& batch, int threads,
               PointResult& r, const BenchObserver& observer);

  const BenchConfig& config_;
  std::string run_dir_;
  std::map<std::string, Worker> workers_;
};

// The task the worker loads for tach's model, as the protocol names it.
std::string engine_task(const ModelInfo& info);

}  // namespace tach::bench
