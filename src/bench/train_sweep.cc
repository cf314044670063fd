// tach bench --train: the training sweep's grid against the run store. Per point: the fit
// check (tach estimate for the point's method and checkpointing) skips a point that cannot fit,
// with the reason; a point that fails is a result; a finished point is never run again, so a
// killed sweep resumes where it stopped.
#include <algorithm>
#include <new>

#include "bench/bench_internal.h"
#include "bench/engine_point.h"
#include "dist/communicator.h"
#include "core/out_of_memory.h"
#include "estimate/out_of_memory_advice.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "tach/runtime.h"
#include "tach/stats.h"
#include "model/family.h"
#include "train/training_model.h"

namespace tach::bench {

namespace {

// What the sweep knows of the model without building it: for the summary.
struct TrainModelFacts {
  ModelSummary summary;
};

TrainModelFacts model_facts(const BenchConfig& config) {
  TrainModelFacts f;
  const train::TrainingModelSource src = train::open_training_model(config.model, config.seed);
  ModelSummary& s = f.summary;
  s.spec = config.model;
  s.source = src.source;
  s.synthetic_weights = src.location.dir.empty();
  s.weights_dtype = "f32 master copies (each point builds its own, with its method)";
  const Head head = train_task_head(config.train.task);
  s.architecture = !src.family                             ? src.model_type
                   : head == Head::sequence_classification ? src.family->classifier_architecture
                                                           : model::architecture_for_head(*src.family, head);
  const bool own = head == Head::sequence_classification ? src.checkpoint_has_head : src.has_head(head);
  if (head == Head::sequence_classification || head == Head::token_classification) s.labels = src.id2label();
  const std::string labels =
      own ? std::to_string(s.labels.size()) + " labels" : "a new 2-label head, as transformers adds one";
  const std::string what =
      head == Head::sequence_classification ? "sequence classification (" + labels + ")"
      : head == Head::token_classification  ? "token classification (" + labels + "), every token labelled"
      : head == Head::question_answering
          ? std::string("question answering (start and end positions)") + (own ? "" : ", a new head")
          : std::string("the masked LM (15% of tokens predicted)") + (own ? "" : ", a new head");
  s.task = "training steps of " + what + ": forward with the loss, backward, clipping, AdamW";
  return f;
}

// What tach estimate is asked of a training point.
EstimateInput point_estimate_input(const BenchConfig& config, const PointKey& key) {
  EstimateInput ei = estimate_input(config, key);
  ei.head = train_task_head(config.train.task);
  ei.mode = "train-" + key.method;
  ei.gradient_checkpointing = key.gradient_checkpointing;
  ei.lora_rank = config.train.lora_r;  // on the estimate's default targets: every linear, as the point adapts
  return ei;
}

// The point's estimate. Empty reason when it fits (or when there is no estimate for the model).
std::string fit_check(const BenchConfig& config, const PointKey& key, PointResult::Train* t) {
  const EstimateInput ei = point_estimate_input(config, key);
  MemoryEstimate e;
  std::string refusal = fit_refusal(ei, &e);
  t->estimate_bytes = e.total_bytes;
  t->available_bytes = e.available_bytes;
  if (refusal.empty() || key.gradient_checkpointing) return refusal;
  return refusal + " (gradient checkpointing would fit more)";
}

// A point's threads: 0 means the run's default (`pinned`, the count its earlier default points
// used, or this machine's), shared among the ranks on it.
int threads_of(const PointKey& key, const dist::Communicator& comm, int pinned) {
  if (key.threads > 0) return key.threads;
  if (pinned > 0 || comm.local_size() <= 1) return pinned;
  set_threads(0);
  return std::max(1, threads() / comm.local_size());
}

}  // namespace

SweepOutcome execute_train(RunStore& store, const BenchObserver& observer, const PointSelection& selection) {
  const BenchConfig& config = store.config();
  SweepOutcome out = outcome_of_store(store, observer);
  // A missing column, unknown labels or no tokenizer stop the run before anything is measured.
  std::optional<TrainInputs> inputs;
  if (!config.dataset.path.empty() && selection.measure) inputs = read_train_inputs(config);  // not to read back
  const std::string input_name = inputs ? inputs->name : "synthetic";
  const TrainModelFacts facts = model_facts(config);
  out.models.push_back(facts.summary);
  if (config.model == BenchConfig{}.model && observer.on_note)
    observer.on_note("no model given: the default training sweep, " + config.model +
                     " with synthetic weights; on 2 cores it takes a few minutes");
  const std::vector<PointKey> keys = sweep_grid(config);
  EngineWorkers workers(config, store.dir());  // other engines' points: a worker each
  const int default_threads = selection.measure ? pinned_default_threads(store, observer, out) : 0;
  std::vector<double> write_ms;
  dist::Communicator& comm = dist::Communicator::world();
  const bool lead = comm.rank() == 0;
  if (comm.distributed() && lead && observer.on_note)
    observer.on_note(std::to_string(comm.size()) +
                     " ranks (MPI): every point's steps are data-parallel; its batch is "
                     "per rank, and samples/s and tokens/s count every rank's rows");
  for (size_t i = 0; i < keys.size(); ++i) {
    const PointKey& key = keys[i];
    if (store.is_finished(key)) {
      ++out.resumed_points;
      continue;
    }
    if (!selection.runs(key)) continue;
    if (observer.on_point_start) observer.on_point_start(key, i, keys.size());
    PointResult r;
    PointResult::Train fit;
    // tach's estimate is of tach's own step: another engine's point runs and shows.
    std::string no_fit = key.engine == "tach" ? fit_check(config, key, &fit) : std::string();
    // Every rank skips or runs the point together: rank 0's estimate decides.
    if (comm.distributed()) no_fit = comm.broadcast(no_fit, "broadcast of the fit check of " + key.id());
    if (!no_fit.empty()) {
      r = failed_point(key, no_fit, input_name);
      r.status = "skipped";
    } else {
      set_threads(threads_of(key, comm, default_threads));
      try {
        r = key.engine != "tach" ? workers.run_train_point(key, inputs ? &*inputs : nullptr, threads(), observer)
                                 : run_train_point(config, key, inputs ? &*inputs : nullptr, observer, store.dir(),
                                                   lead ? store.tensorboard() : nullptr);
      } catch (const Stopped&) {
        throw;  // a Ctrl-C inside the point (its ceilings measurement): not a result, run again on --resume
      } catch (const OutOfMemory& e) {
        // tach's own step: tach estimate's figures for it, and what would fit.
        const std::string advice =
            key.engine == "tach" ? out_of_memory_advice(point_estimate_input(config, key), MemorySwitches{}) : "";
        r = failed_point(key, e.what() + advice, input_name);
      } catch (const Error& e) { r = failed_point(key, e.what(), input_name); } catch (const std::bad_alloc&) {
        r = failed_point(key, "out of memory (an allocation failed)", input_name);
      }
      r.threads_used = threads();
      set_threads(0);
    }
    r.train.estimate_bytes = fit.estimate_bytes;
    r.train.available_bytes = fit.available_bytes;
    if (!lead) continue;  // rank 0 writes the run
    write_ms.push_back(store.append(r));
    if (observer.on_point_done) observer.on_point_done(r, i, keys.size());
  }
  std::map<std::string, const PointResult*> by_id;
  for (const auto& p : store.finished()) by_id[p.key.id()] = &p;
  for (const auto& key : keys)
    if (auto it = by_id.find(key.id()); it != by_id.end()) out.results.push_back(*it->second);
  for (const auto& p : out.results)
    if (p.status == "ok") {
      out.models.front().parameters = p.train.parameters;
      break;
    }
  out.result_write_ms_median = summarize(write_ms).median;
  return out;
}

}  // namespace tach::bench
