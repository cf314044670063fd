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

struct TaskAccuracyData;  // task_passes.h

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
  // key.engine's training point (tach bench --train): tach's reference steps on the point's batch
  // (train_reference), then the worker loaded to train from the same checkpoint, fed the same
  // batch, its first steps' losses compared with tach's, then its steps timed under the rule with
  // their phases. Never throws for a worker's failure, as run_point.
  PointResult run_train_point(const PointKey& key, const TrainInputs* inputs, int threads,
                              const BenchObserver& observer);
  // engine's accuracy pass beside tach's pass `tach` (its device, dtype, examples and predictions),
  // through the worker's model loaded with `threads`: a sequence classifier's (tach.task "") over
  // `texts`, tach's batches of token ids (accuracy_batches), its logits' argmax; a per-token head's
  // over `task`, tach eval's sentences or windows, its per-token logits turned into tags or answers
  // by tach's code. Scored by tach's metrics, with how many predictions differ from tach's. Never
  // throws for the engine's failure (a dtype it lacks, a worker that dies): the result is "failed"
  // with the reason.
  EngineAccuracy run_accuracy(const EncoderModel& tach_model, const std::string& engine, const AccuracyResult& tach,
                              const TextSource* texts, const TaskAccuracyData* task, int threads);

 private:
  struct Worker {
    std::unique_ptr<engines::EngineClient> client;
    std::string loaded;  // device/dtype/threads of the model it holds ("" none)
    nlohmann::json load_reply;
    double ping_us = 0;
  };
  Worker& started(const std::string& engine);
  void start_worker(Worker& w, const std::string& engine);  // a new worker process in w, its ping measured
  void measure(Worker& w, const EncoderModel& tach_model, const PointKey& key, const TokenBatch& batch, int threads,
               PointResult& r, const BenchObserver& observer);
  void measure_train(Worker& w, const PointKey& key, const TrainReference& ref, int threads, PointResult& r,
                     const BenchObserver& observer);
  // Loads the worker's model for the point unless it holds it (`loaded`: what it was loaded for; a
  // worker holding another gives way to a fresh one, as a worker loads one model in its life), and
  // sets the point's one-time costs from that load's reply.
  void load(Worker& w, const PointKey& key, const std::string& loaded, const nlohmann::json& request,
            PointResult::EngineRun& e);

  const BenchConfig& config_;
  std::string run_dir_;
  std::map<std::string, Worker> workers_;
};

// An earlier accuracy pass of `engine` that a resumed run keeps for tach's pass `tach`: an ok one for
// the same device, dtype, examples and --python (the file's settings already matched), or nullptr.
const EngineAccuracy* kept_engine_accuracy(const std::vector<EngineAccuracy>& kept, const std::string& engine,
                                           const AccuracyResult& tach, const std::string& python);

// The task the worker loads for tach's model, as the protocol names it.
std::string engine_task(const ModelInfo& info);

// What the inference and training points share.
namespace engine_detail {
std::string model_dir(const BenchConfig& config);  // the model's directory ("" for synthetic weights)
// ONNX exports and other engines' caches: $XDG_CACHE_HOME/tach/engines, else ~/.cache/tach/engines.
std::string engine_cache_dir();
nlohmann::json ids_json(const Tensor& t);  // t: [B, T] i32 -> rows of integers
std::string versions_text(const nlohmann::json& versions);
double number_or(const nlohmann::json& j, const char* key, double fallback);
PointResult failed_with(const PointResult& r, const std::string& reason);
// Starts engine's worker once, before anything is written (its log in a temporary directory,
// removed), and returns its ready line's versions: missing packages are EngineUnavailable, naming
// them with their pip command; a worker that does not start is an Error saying so.
nlohmann::json worker_versions(const std::string& engine, const std::string& python);
// A point of another engine before it runs: its key, input's name, warm-up, threads and the worker's log.
PointResult engine_point_start(const BenchConfig& config, const PointKey& key, const std::string& input, int threads);
// The worker's "load" request for the point's model: its task, dtype, device and threads, the
// engines' cache, and `train` (the training settings, or null for inference).
nlohmann::json load_request(const BenchConfig& config, const PointKey& key, const std::string& task, int threads,
                            nlohmann::json train);
}  // namespace engine_detail

// Calls timed by the worker under tach's stopping rule, in chunks (shared by the inference and the
// training points): sets r.stopped_by (with a CONTENDED note), r.load, the protocol's cost, the
// worker's memory, the energy (over r.real_tokens_per_batch, set before) and the wall figures.
// Returns each counted call's seconds and, per reply, how many of its first calls were counted.
struct TimedCalls {
  std::vector<double> seconds;
  std::vector<std::pair<nlohmann::json, int64_t>> replies;
};
TimedCalls time_under_rule(engines::EngineClient& c, const BenchConfig& config, const PointKey& key, int threads,
                           double first_call_s, PointResult& r, const BenchObserver& observer);
// The "inputs" request for a batch: its ids, mask and segment ids as [batch][length] integers.
nlohmann::json inputs_request(const TokenBatch& batch);
}  // namespace tach::bench
