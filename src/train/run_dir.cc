// A run's directory before its first step: a new one claimed with its config.json (everything
// needed to re-run it), or the resumed one with its checkpoint's weights, moments and counters
// restored and the log lines after that checkpoint dropped; and its TensorBoard event file.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/parallel.h"
#include "model/safetensors_writer.h"
#include "tach/runtime.h"
#include "tach/system_info.h"
#include "train/run_checkpoint.h"
#include "train/run_files.h"
#include "train/train_options.h"
#include "train/train_run.h"

namespace tach::train {

namespace {

namespace fs = std::filesystem;

constexpr const char* kEpochHeader =
    "epoch,train_loss,eval_loss,eval_accuracy,eval_macro_f1,epoch_seconds,tokens_per_s,samples_per_s,peak_memory_bytes";

nlohmann::json model_config(const TrainRun& r) {
  const TrainableModel& m = *r.model;
  return {{"source", r.src.source},
          {"architecture", m.architecture()},
          {"labels", r.labels},
          {"problem_type", r.problem_type},
          {"parameters", m.params.count(false)},
          {"trainable_parameters", m.params.count(true)},
          {"nf4_weight_bytes", m.params.nf4_bytes()},
          {"notes", r.head_notes}};
}

nlohmann::json distributed_config(const TrainRun& r) {
  return {{"world_size", r.world()},
          {"backend", r.world() > 1 ? "mpi" : "none"},
          {"batch_per_rank", r.o.batch_size},
          {"global_batch", r.plan.batch},
          {"sharding", "rank r takes rows r, r+N, ... of each global batch; losses weighted by each rank's rows"},
          {"gradient_buckets", r.dp ? r.dp->reducer().bucket_count() : 0},
          {"bucket_mb", r.o.bucket_mb},
          {"timeout_s", r.o.dist_timeout}};
}

// A new run's directory and its config.json, by rank 0.
void write_new_run_dir(TrainRun& r) {
  TrainOptions& o = r.o;
  r.run_dir = claim_run_dir(o.runs_dir, o.model, o.run_id);
  announce_run_dir(r.run_dir);
  o.run_id = fs::path(r.run_dir).filename().string();
  const SystemInfo sys = system_info();
  nlohmann::json cfg = {
      {"schema", "tach.train_config/1"},
      {"options", options_to_json(o)},
      {"model", model_config(r)},
      {"data",
       {{"train_examples", r.plan.examples},
        {"eval_examples", r.eval_data.size()},
        {"batches_per_epoch", r.plan.batches_per_epoch},
        {"steps_per_epoch", r.plan.steps_per_epoch},
        {"total_steps", r.plan.total_steps},
        {"warmup_steps", r.plan.warmup_steps}}},
      {"precision",
       {{"dtype", o.dtype}, {"gemm", training_gemm_description(r.step->settings().precision, r.device())}}},
      {"machine",
       {{"cpu", sys.cpu_model},
        {"device", r.device().str()},  // where the steps ran (this invocation's --device)
        {"threads", core::num_threads()},
        {"isa", sys.isa.summary()},
        {"gemm", sys.gemm_library}}},
      {"distributed", distributed_config(r)}};
  model::write_file_atomically(r.run_dir + "/config.json", cfg.dump(2) + "\n");
}

// The log lines of a resumed run that a checkpoint at start_step stands by. Each rank trims its
// own log; rank 0 the run's.
void trim_logs_to_checkpoint(TrainRun& r) {
  const auto before_checkpoint = [&](const std::string& line, size_t) {
    try {
      return nlohmann::json::parse(line).at("step").get<int64_t>() < r.start_step;
    } catch (const std::exception&) {
      return false;  // a line cut short by the kill
    }
  };
  if (r.world() > 1) keep_lines(r.rank_dir() + "/steps.jsonl", before_checkpoint);
  if (!r.lead()) return;
  keep_lines(r.steps_path, before_checkpoint);
  const int64_t epochs_done = r.start_step / r.plan.steps_per_epoch;  // epochs 0 .. epochs_done - 1 are complete
  keep_lines(r.epochs_path, [&](const std::string& line, size_t i) {
    return i == 0 || std::atoll(line.c_str()) < epochs_done;  // epochs that ended by the checkpoint
  });
}

}  // namespace

// The run's directory: a new one claimed by rank 0 and told to the others, or the resumed one.
void create_run_dir(TrainRun& r) {
  if (r.run_dir.empty()) {
    if (r.lead()) write_new_run_dir(r);
    // Every rank works in the directory rank 0 claimed.
    if (r.world() > 1) r.run_dir = r.comm->broadcast(r.run_dir, "broadcast of the run directory");
  }
  if (r.world() > 1) r.comm->set_heartbeat_dir(r.run_dir + "/ranks");
}

// A resumed run: the checkpoint's weights, moments and counters; the log lines after it dropped.
void restore_checkpoint(TrainRun& r) {
  r.steps_path = r.run_dir + "/steps.jsonl";
  r.epochs_path = r.run_dir + "/epoch_results.csv";
  if (!r.resume_checkpoint.empty()) {
    const nlohmann::json state = load_run_checkpoint(r.resume_checkpoint, r.model->params, r.step->optimizer());
    r.start_step = state.at("step").get<int64_t>();
    r.train_seconds_before = state.value("train_seconds", 0.0);
    r.epoch = EpochTotals::from_json(state);
    r.result.resumed_from = r.start_step;
    // Steps logged after the checkpoint are done again: drop them, and epochs that ended after it.
    trim_logs_to_checkpoint(r);
    if (!r.lead()) return;
    r.note("resuming " + r.run_dir + " after step " + std::to_string(r.start_step) + " (" + r.resume_checkpoint + ")");
  } else if (!r.o.resume.empty()) {
    r.note("no checkpoint in " + r.run_dir + " yet: starting it from step 0");
    std::error_code ec;
    if (r.world() > 1) fs::remove(r.rank_dir() + "/steps.jsonl", ec);
    if (!r.lead()) return;
    fs::remove(r.steps_path, ec);
    fs::remove(r.epochs_path, ec);
  }
  if (!r.lead()) return;
  // Distillation: train_loss is the mix; its two terms follow the other columns.
  if (!fs::exists(r.epochs_path))
    model::write_file_atomically(
        r.epochs_path, std::string(kEpochHeader) + (r.teacher ? ",train_task_loss,train_distill_loss" : "") + "\n");
}

// A new event file for this process; a resumed run tells TensorBoard to drop the steps it redoes.
void open_tensorboard(TrainRun& r) {
  if (!r.o.tensorboard || !r.lead()) return;
  r.tensorboard = std::make_unique<TensorBoardWriter>(r.run_dir + "/tensorboard");
  // Resumed, even from step 0 (no checkpoint yet): the steps from here on replace earlier files' ones.
  if (!r.o.resume.empty()) r.tensorboard->restart_at(r.start_step);
  std::ifstream in(r.run_dir + "/config.json");
  std::stringstream config;
  config << in.rdbuf();
  // Four spaces make it a code block in TensorBoard's Markdown.
  std::string text = "    ";
  for (char c : config.str()) text += c == '\n' ? std::string("\n    ") : std::string(1, c);
  r.tensorboard->text("config", text, r.start_step);
}

}  // namespace tach::train
