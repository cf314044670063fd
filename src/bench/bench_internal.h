// Pieces of the bench room shared between its files (not public).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "bench/gpu_energy.h"
#include "core/utc_time.h"
#include "tach/bench.h"
#include "tach/estimate.h"
#include "tach/metrics.h"
#include "tach/model.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/tokenizer.h"
#include "train/train_data.h"

namespace tach::bench {

// Empty while the point should go on; otherwise the rule that stopped it, in words.
// latencies_s: the measured runs so far.
std::string stop_reason(const StoppingRule& rule, const std::vector<double>& latencies_s, double measured_s);

Distribution distribution(const std::vector<double>& values);

using core::utc_now_iso;
std::string slurp(const std::string& path);  // a whole file; an error naming it when it cannot be read

// The run directory: config.json, results.jsonl (appended and flushed per point).
class RunStore {
 public:
  // Creates dir (which must not hold a results.jsonl yet) and writes config.json.
  static RunStore create(const std::string& dir, const BenchConfig& config);
  // Opens an existing run: reads config.json and the finished points of every results file.
  // append() writes to results_file (relative to dir; a SLURM task's own file under results.d/),
  // whose torn last line is cut; an empty results_file opens it to read only.
  static RunStore open(const std::string& dir, const std::string& results_file = "results.jsonl");

  const std::string& dir() const { return dir_; }
  const BenchConfig& config() const { return config_; }
  const std::vector<PointResult>& finished() const { return finished_; }
  bool is_finished(const PointKey& key) const { return finished_ids_.count(key.id()) != 0; }
  // Appends one line and flushes it to the file (fsync), so that a kill keeps it. Returns the ms the line took (the TensorBoard scalars after it are not counted).
  double append(const PointResult& point);
  // This process's TensorBoard event file in RUN_DIR/tensorboard/, opened on first use; nullptr
  // when the run's config turns TensorBoard off. append() writes each point's figures to it.
  TensorBoardWriter* tensorboard();
  void write_text(const std::string& name, const std::string& text) const;   // atomically (tmp + rename)
  static void write_file(const std::string& path, const std::string& text);  // the same, any path
  std::vector<std::string> notes;                                            // what opening found (a cut line)

 private:
  std::string dir_;
  std::string results_file_ = "results.jsonl";
  BenchConfig config_;
  std::vector<PointResult> finished_;
  std::set<std::string> finished_ids_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

// A finished point's figures as TensorBoard scalars, tagged METRIC/SERIES (the point's id without
// its batch size) at step = the batch size, so each series draws a curve over batch sizes.
void write_point_scalars(TensorBoardWriter& writer, const PointResult& point);

// Texts that feed dataset points and the accuracy pass.
struct TextSource {
  std::vector<Example> examples;  // shuffled
  std::unique_ptr<Tokenizer> tokenizer;
  std::string name;  // "dataset <path>"
};
// Reads and shuffles the dataset (limit applied); the tokenizer comes once the model is known.
TextSource read_texts(const BenchConfig& config);
// The tokenizer config.tokenizer names, or the model directory's.
void attach_tokenizer(TextSource& texts, const BenchConfig& config, const ModelInfo& info);
// What a pass over dataset texts needs, checked before a run directory is made: the dataset
// readable with its columns, and a tokenizer (--tokenizer, or the model's own files) that loads.
void check_text_inputs(const BenchConfig& config);

// "auto" among the devices: the first GPU when one is usable (forwards and training steps alike),
// else the CPU. Returns what was picked and why, for the run's notes; empty when no device said auto.
std::string resolve_auto_device(BenchConfig& c);
// A run id from the time and the model's name: "20261127-001500-NAME".
std::string default_run_id(const std::string& model);
// Claims runs_dir/base (or base-2, base-3, ...) by creating it: two runs started in the same
// second never share a directory.
std::string unique_run_id(const std::string& runs_dir, const std::string& base);

// The pad id and the type-id flag a batch needs for this model.
TokenBatch synthetic_batch(const ModelInfo& info, int64_t batch, int64_t seq_len, uint64_t seed);
// Tokenizes the examples at `rows`, truncated to max_length and padded to max_length, or to the
// longest row when pad_to_longest.
TokenBatch text_batch(const TextSource& texts, const ModelInfo& info, const std::vector<size_t>& rows,
                      int64_t max_length, bool pad_to_longest);

// A dataset made ready for a training sweep: read once, its head's labels settled against the
// model's, and tokenized per sequence length on first use (truncated to it; batches pad to their
// longest row, as tach train's do).
struct TrainInputs {
  Dataset dataset;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<std::string> labels;  // the head's: the checkpoint's, or the data's for a new head
  std::string problem_type;
  int32_t pad_id = 0;
  bool with_types = false;
  std::string name;  // "dataset <path>"
  mutable std::map<int64_t, train::TrainData> by_length;
  const train::TrainData& data_for(int64_t seq_len) const;
};
TrainInputs read_train_inputs(const BenchConfig& config);

// The fit check before a point: tach estimate for `in`; empty when the point fits (or when
// there is no estimate for the model: then the point runs and shows), else why it is skipped,
// with the estimate's numbers and the largest batch that fits. *estimate gets the estimate.
std::string fit_refusal(const EstimateInput& in, MemoryEstimate* estimate = nullptr);
// The estimate's input for a point: the run's model at the point's dtype, batch, length, device.
EstimateInput estimate_input(const BenchConfig& config, const PointKey& key);

// A training sweep's --task as the head that trains (TrainSweep::task's names).
Head train_task_head(const std::string& task);

// The allocator's books for `device` (every category, total, mapped, cached) into p.allocator.
void record_allocator(PointResult& p, Device device);

// The sweep's points in grid order (the batch innermost).
std::vector<PointKey> sweep_grid(const BenchConfig& config);
PointResult failed_point(const PointKey& key, const std::string& reason, const std::string& input);
// The thread count the run's default points (threads 0) run with: the count its earlier default
// points used, so that a resumed series stays comparable (with a note in out.notes, and to the
// observer, where it differs from this process's default); 0, this process's default, when none
// ran yet.
int pinned_default_threads(const RunStore& store, const BenchObserver& observer, SweepOutcome& out);
// --profile: a point's profiled steps as RUN_DIR/traces/<point id, '/' as '_'>/ (trace.json, op
// tables by op, module and shape, collapsed stacks, profile.json).
void write_point_traces(const ProfileData& data, const PointKey& key, const std::string& run_dir);
// Which points a sweep process measures. sweep false: none (tach eval's accuracy pass alone);
// only set: these point ids and no others (a SLURM array task); measure false: none, and no
// accuracy pass either: the outcome is what the run's files hold (collect_bench).
struct PointSelection {
  bool sweep = true;
  bool measure = true;
  const std::set<std::string>* only = nullptr;
  bool runs(const PointKey& key) const { return measure && (!only || only->count(key.id()) != 0); }
};

// A new sweep's run directory (config.json) for the config as given: auto devices resolved, the
// config validated, the run id chosen. here false: the devices and the bf16 GEMM are left for the
// machines that will run the points to check (a SLURM submission).
RunStore create_sweep_run(const BenchConfig& given, bool here = true);
void validate_sweep(const BenchConfig& config, bool here = true);  // the errors run_bench gives a bad config
// The grid against the store: the selection's points that have no result yet, each appended as
// it finishes, then the accuracy pass when asked for and not yet written. results: every grid
// point the store holds, in grid order.
SweepOutcome execute_sweep(RunStore& store, const BenchObserver& observer, const PointSelection& selection,
                           bool accuracy);
// A sweep's outcome before any point: the store's directory, config and what opening it found
// (its notes), each note also given to the observer.
SweepOutcome outcome_of_store(const RunStore& store, const BenchObserver& observer);
// A training sweep's points against the store (tach bench --train).
SweepOutcome execute_train(RunStore& store, const BenchObserver& observer, const PointSelection& selection);

// One training point: its model built for the method, warm-up steps, measured steps until the
// rule stops, the phases, memory, and one profiled step for the FLOPs. Throws on failure.
// With config.profile, the profiled step's trace and tables go to run_dir/traces/<point>/; with a
// TensorBoard writer, every measured step's figures go to it as step_METRIC/<point id>.
PointResult run_train_point(const BenchConfig& config, const PointKey& key, const TrainInputs* inputs,
                            const BenchObserver& observer, const std::string& run_dir, TensorBoardWriter* tensorboard);

// tach's own steps for another engine's training point: the point's model (its method, from the
// checkpoint), `steps` steps on one batch (the point's synthetic rows, or the first batch of the
// dataset's seeded order), their losses, then one profiled step for the model FLOPs and the
// ceiling MFU is taken against, as a tach point takes them.
struct TrainReference {
  TokenBatch batch;
  train::Targets targets;
  Head head = Head::sequence_classification;
  int64_t labels = 2;
  std::string problem_type;
  bool head_from_checkpoint = true;                        // false: a new head, each engine initialises its own
  std::vector<std::string> lora_targets, modules_to_save;  // the family's defaults, PEFT's names
  std::vector<double> losses;
  double model_flops_per_step = 0, ceiling_gflops_per_s = 0;
  bool ceiling_under_load = false;
  double ceiling_other_cores = -1, ceiling_load_average = -1;
};
TrainReference train_reference(const BenchConfig& config, const PointKey& key, const TrainInputs* inputs, int steps);

// The energy of a run on a GPU (NVML): bench/gpu_energy.h.

// The point's load (other processes' CPU use over `window`, opened at its first timed run) into
// r.load; a contended point's stopped_by says its precision is the shared machine's.
void record_load(PointResult& r, CpuLoadWindow& window);
PointResult::Load load_of(const CpuLoad& l);
// "; CONTENDED: other processes used 1.02 cores beside it, so this rate is the shared machine's"
// for a contended eval pass (said after its rate), "" otherwise.
std::string contended_rate_note(const PointResult::Load& l);
// A point's or an accuracy pass's "load" object (results.jsonl, accuracy.json), and back.
nlohmann::json load_json(const PointResult::Load& l);
PointResult::Load load_from(const nlohmann::json& j);

// One point: warm-up, measured runs until the rule stops, memory. Throws on failure.
PointResult run_point(const EncoderModel& model, const BenchConfig& config, const PointKey& key,
                      const TextSource* texts, const BenchObserver& observer);

// The accuracy pass's batches over the first n examples (rows of texts.examples; with
// config.bucketing, sorted by text length first), config.eval_batch_size rows each: tach's pass and
// other engines' passes classify the same batches, each padded to its longest row.
std::vector<std::vector<size_t>> accuracy_batches(const TextSource& texts, size_t n, const BenchConfig& config);
// The pass's truncation: --eval-max-length, at most the model's positions.
int64_t accuracy_max_length(const ModelInfo& info, const BenchConfig& config);

// The accuracy pass on texts; one result per sample size (prefixes of the shuffled examples).
std::vector<AccuracyResult> evaluate(const EncoderModel& model, const TextSource& texts, const BenchConfig& config,
                                     const BenchObserver& observer);

ModelSummary summarize_model(const EncoderModel& model, int64_t memory_bytes);

}  // namespace tach::bench
