// tach train's run: what it holds between its phases (TrainRun), and the phases, one file each.
//   run_setup.cc       the options (or a resumed run's), the head's labels, the model and its method, the step
//   run_data.cc        the training and evaluation examples, tokenized once; a step's micro-batches
//   run_dir.cc         the run directory and config.json, the checkpoint resumed from, TensorBoard
//   epoch_loop.cc      the steps: each one's log line, evaluation, the epoch's row, the resume checkpoint
//   run_summary.cc     summary.json's figures (and a finished run's, read back)
//   after_training.cc  after the last step: summary.json, the model saved, the profiled ops judged
//   trainer.cc         run_training: the phases in order, on each rank
// Every file is written so that a kill at any instant leaves the last complete state readable
// (docs/train.md). Internal to src/train: the CLI sees include/tach/train.h.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/conll.h"
#include "data/squad.h"
#include "dist/communicator.h"
#include "model/peft_adapter.h"
#include "tach/dataset.h"
#include "tach/memory.h"
#include "tach/metrics.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/train.h"
#include "train/data_parallel.h"
#include "train/lr_schedule.h"
#include "train/train_data.h"
#include "train/train_eval.h"
#include "train/train_step.h"
#include "train/training_model.h"

namespace tach::train {

using RunClock = std::chrono::steady_clock;
inline double seconds_since(RunClock::time_point t) {
  return std::chrono::duration<double>(RunClock::now() - t).count();
}

// The steps of a run, from the data's size and the options.
struct StepPlan {
  int64_t examples = 0, batch = 0, accumulation = 0;
  int64_t batches_per_epoch = 0, steps_per_epoch = 0, total_steps = 0, warmup_steps = 0;
  LinearSchedule schedule;
};
// batch: the global batch (every rank's rows together).
StepPlan plan_steps(const TrainOptions& o, int64_t examples, int world_size);

// What the run carries across the epochs (and across a resume, through the checkpoint).
struct EpochTotals {
  double loss_sum = 0, seconds = 0;
  double task_loss_sum = 0, distill_loss_sum = 0;  // distillation: the mix's two terms
  int64_t loss_count = 0, tokens = 0, samples = 0;
  CpuLoad load;  // the reading that ended in this epoch (TrainRun::load_window); unmeasured: none did
  nlohmann::json to_json() const;
  static EpochTotals from_json(const nlohmann::json& j);
};

// Every step's phase times and rates, for the summary's medians.
struct StepSeries {
  std::vector<double> step_ms, data_ms, fwd_ms, bwd_ms, opt_ms, comm_ms, exposed_ms, tok_rates, sample_rates;
  std::vector<double> teacher_ms;  // distillation's teacher phase (0 without a teacher)
  void add(const StepOutcome& s);
};

// The allocator's peaks on the model's device are reset per epoch (epoch_results.csv has each
// epoch's); the run's are folded here.
struct RunPeaks {
  std::array<int64_t, kMemoryCategoryCount> by_category{};
  int64_t total = 0;
  void fold(Device device);  // the peaks of `device`'s allocator
};

// Everything a run holds between its phases.
struct TrainRun {
  TrainOptions o;
  TrainResult result;
  std::function<void(const std::string&)> note;
  std::string run_dir, resume_checkpoint, steps_path, epochs_path;
  TrainingModelSource src;
  std::vector<std::string> labels, head_notes;
  std::string problem_type, tokenizer_path;
  std::shared_ptr<model::PeftAdapter> adapter;
  std::unique_ptr<TrainableModel> model;
  Head task = Head::sequence_classification;  // --task's head
  // How the command's messages name a task that reads another kind of data: "--task" (tach train:
  // "--task token-classification reads it"); empty where the task is the model's own head and the
  // command has no --task (tach prune: "-m with a token-classification model reads it").
  std::string task_flag = "--task";
  // Other processes' CPU use over the steps, opened at the first step after a reading (or a
  // resume), read between steps. A reading needs half a second of /proc/stat's 10 ms ticks, so
  // a window runs on across short epochs and is read at the end of the one that fills it.
  std::optional<CpuLoadWindow> load_window;
  Dataset train_set;
  std::vector<data::TaggedSentence> tagged;    // token classification's training sentences
  std::vector<data::SquadQuestion> questions;  // question answering's
  TrainData data, eval_data;
  bool has_eval = false;
  StepPlan plan;
  std::unique_ptr<DistillTeacher> teacher;  // --distill-from (null: none); the step reads it
  std::unique_ptr<TrainingStep> step;
  int64_t start_step = 0;
  double train_seconds_before = 0;
  EpochTotals epoch;
  StepSeries series;
  RunPeaks peaks;
  std::unique_ptr<TensorBoardWriter> tensorboard;  // RUN_DIR/tensorboard/, unless --no-tensorboard
  // Data-parallel: this rank's place, and the sharding and gradient sums (null in one process).
  // Rank 0 writes the run directory; every rank writes its own step times under ranks/.
  dist::Communicator* comm = nullptr;
  std::unique_ptr<DataParallel> dp;
  bool lead() const { return !comm || comm->rank() == 0; }
  int world() const { return comm ? comm->size() : 1; }
  std::string rank_dir() const { return run_dir + "/ranks/rank-" + std::to_string(comm ? comm->rank() : 0); }
  // Where the step's tensors live (the model's device, built on the options'), and so whose
  // allocator's figures the run reports.
  Device device() const { return model ? model->device : o.device; }
};

// run_setup.cc
void join_ranks(TrainRun& r);      // data-parallel: this rank's communicator, deadline and threads
void resume_options(TrainRun& r);  // a resumed run's options (or: finished already, left as it is)
// The task: --task's, or where none was given (TrainOptions::task_default) a token classifier's or
// question-answering checkpoint's own head's (said in a note); a task that leaves the checkpoint's
// own task head out says so.
void choose_task(TrainRun& r);
void resolve_head(TrainRun& r);  // the head's labels and problem type
void build_model(TrainRun& r);   // the trainable model with its method applied
// The rows (question answering's windows) within the model's positions: a default length fitted
// (with a note), a --max-length or --eval-max-length given past them refused (a usage error).
void fit_windows_to_model(TrainRun& r);
void make_step(TrainRun& r);  // the step: its execution, dropout, precision and optimizer

// distill_setup.cc: --distill-from's teacher, checked against the student (null without one).
std::unique_ptr<DistillTeacher> open_teacher(TrainRun& r);
// summary.json's "distillation": the teacher, its dtype, T, alpha and the loss they make.
nlohmann::json distillation_summary(const TrainOptions& o);

// run_data.cc
void read_training_examples(TrainRun& r);  // --dataset's examples (or sentences, or questions)
void prepare_data(TrainRun& r);            // the training (and evaluation) examples tokenized once
// Micro-batch `micro` of the step whose first batch is `first_batch` in the epoch's order.
MicroBatchSource micro_batches_of(const TrainRun& r, const std::vector<int64_t>& order, int64_t first_batch,
                                  int64_t epoch);

// run_dir.cc
void create_run_dir(TrainRun& r);      // a new one (config.json written by rank 0), or the resumed one
void restore_checkpoint(TrainRun& r);  // a resumed run's weights, moments and counters
void open_tensorboard(TrainRun& r);

// epoch_loop.cc: the steps from start_step to the end (or to a divergence). Returns the step reached.
int64_t train_loop(TrainRun& r, Profiler& profiler, const TrainObserver& observer);

// run_summary.cc
void result_from_summary(const nlohmann::json& summary, TrainResult& res);
bool summary_says_finished(const nlohmann::json& summary);
// From this process's steps (a collective under mpirun); r.peaks folded already.
nlohmann::json measured_summary(TrainRun& r, const std::string& profiled_steps);
// A run resumed after its last step: the summary written before, or one from steps.jsonl.
nlohmann::json summary_of_finished_training(TrainRun& r, const std::string& profiled_steps);
void write_summary(const TrainRun& r, const nlohmann::json& summary);
extern const char* const kNoOpVerdicts;  // summary.json's top_ops_note until the ops are judged

// after_training.cc: summary.json, the model saved and the profiled ops judged.
void after_training(TrainRun& r, const Profiler& profiler, const std::string& profiled_steps);

}  // namespace tach::train
