// tach train's steps: each one run (train/train_step.h: data, forward, backward, optimizer, each
// timed), then its steps.jsonl line, the evaluation when due, the epoch's row of
// epoch_results.csv and the resume checkpoint. A Ctrl-C ends the loop after the step in flight,
// checkpointed; a loss or gradient norm that is not finite ends it before the update.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/parallel.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "tach/plain_number.h"
#include "train/run_checkpoint.h"
#include "train/run_files.h"
#include "train/train_run.h"

namespace tach::train {

namespace {

namespace fs = std::filesystem;

// steps.jsonl's line for one step.
void log_step(TrainRun& r, TrainingLogger& logger, int64_t step, const StepOutcome& s, bool profiled) {
  const double t = s.seconds.total;
  const MemoryStats mem = memory_stats(r.device());
  const int64_t epoch = step / r.plan.steps_per_epoch;  // whole epochs done before this step
  std::map<std::string, double> m = {{"epoch", double(epoch)},
                                     {"loss", s.loss},
                                     {"lr", r.plan.schedule.lr(step)},
                                     {"grad_norm", s.grad_norm},
                                     {"step_ms", t * 1e3},
                                     {"data_ms", s.seconds.data * 1e3},
                                     {"forward_ms", s.seconds.forward * 1e3},
                                     {"backward_ms", s.seconds.backward * 1e3},
                                     {"optimizer_ms", s.seconds.optimizer * 1e3},
                                     {"samples", double(s.samples)},
                                     {"tokens", double(s.tokens)},
                                     {"tokens_per_s", double(s.tokens) / t},
                                     {"samples_per_s", double(s.samples) / t},
                                     {"profiled", profiled ? 1.0 : 0.0},
                                     {"memory_total_bytes", double(mem.total.current)},
                                     {"memory_peak_bytes", double(mem.total.peak)}};
  for (int c = 0; c < kMemoryCategoryCount; ++c)
    m[std::string("memory_") + std::string(memory_category_name(MemoryCategory(c))) + "_bytes"] =
        double(mem.by_category[size_t(c)].current);
  if (r.o.memory_logging && step % r.o.memory_log_steps == 0) m["rss_bytes"] = double(read_process_memory().rss_bytes);
  if (r.teacher) {  // distillation: the teacher's phase and the loss's two terms
    m["teacher_ms"] = s.seconds.teacher * 1e3;
    m["task_loss"] = s.task_loss;
    m["distill_loss"] = s.distill_loss;
  }
  if (r.world() > 1) {
    m["communication_ms"] = s.seconds.communication * 1e3;
    m["communication_exposed_ms"] = s.seconds.communication_exposed * 1e3;
  }
  logger.log_step(step, m);
}

// ranks/rank-R/steps.jsonl: this rank's own times and rows, for the stragglers and the overlap.
void log_rank_step(TrainingLogger& logger, int64_t step, const StepOutcome& s) {
  logger.log_step(step, {{"step_ms", s.seconds.total * 1e3},
                         {"data_ms", s.seconds.data * 1e3},
                         {"forward_ms", s.seconds.forward * 1e3},
                         {"backward_ms", s.seconds.backward * 1e3},
                         {"optimizer_ms", s.seconds.optimizer * 1e3},
                         {"communication_ms", s.seconds.communication * 1e3},
                         {"communication_exposed_ms", s.seconds.communication_exposed * 1e3},
                         {"samples", double(s.rank_samples)},
                         {"tokens", double(s.rank_tokens)}});
}

// Evaluation when due: every eval_every steps, or at each epoch's end.
std::optional<EvalScores> evaluate_if_due(TrainRun& r, TrainingLogger& logger, int64_t step, bool epoch_end) {
  const TrainOptions& o = r.o;
  if (!r.has_eval || !((o.eval_every > 0 && (step + 1) % o.eval_every == 0) || (o.eval_every == 0 && epoch_end)))
    return std::nullopt;
  const EvalScores scores = evaluate_trainable(*r.model, r.eval_data, std::max<int64_t>(o.batch_size, 32),
                                               r.problem_type, r.dp.get(), r.step->settings().precision);
  if (!r.lead()) return scores;
  // A score the task has not (-1: accuracy after a masked LM or question answering, macro-F1
  // after token classification) is left out, as epoch_results.csv leaves it blank.
  std::map<std::string, double> logged = {{"eval_loss", scores.loss}, {"eval_seconds", scores.seconds}};
  if (scores.accuracy >= 0) logged["eval_accuracy"] = scores.accuracy;
  if (scores.macro_f1 >= 0) logged["eval_macro_f1"] = scores.macro_f1;
  if (scores.perplexity >= 0) logged["eval_perplexity"] = scores.perplexity;
  logger.log_step(step, logged);
  r.note("step " + std::to_string(step + 1) + ": eval loss " + std::to_string(scores.loss) +
         (scores.perplexity >= 0 ? ", perplexity " + plain_number(scores.perplexity) : std::string()) +
         (scores.accuracy >= 0 ? ", accuracy " + plain_number(scores.accuracy) : std::string()));
  return scores;
}

// The epoch's figures, as tach train reports them and epoch_results.csv holds them.
TrainEpochReport epoch_report(const TrainRun& r, int64_t epoch, const std::optional<EvalScores>& scores) {
  TrainEpochReport er;
  er.epoch = epoch;
  const double steps = double(std::max<int64_t>(1, r.epoch.loss_count));
  er.train_loss = r.epoch.loss_sum / steps;
  if (r.teacher)
    er.train_task_loss = r.epoch.task_loss_sum / steps, er.train_distill_loss = r.epoch.distill_loss_sum / steps;
  er.evaluated = scores.has_value();
  if (scores) {
    er.eval_loss = scores->loss;
    er.eval_accuracy = scores->accuracy;
    er.eval_macro_f1 = scores->macro_f1;
    er.eval_perplexity = scores->perplexity;
  }
  er.seconds = r.epoch.seconds;
  er.tokens_per_s = double(r.epoch.tokens) / r.epoch.seconds;
  er.samples_per_s = double(r.epoch.samples) / r.epoch.seconds;
  er.peak_bytes = memory_stats(r.device()).total.peak;
  er.load = r.epoch.load;
  return er;
}

// The epoch's row of epoch_results.csv; its totals and the allocator's peaks start again.
void end_epoch(TrainRun& r, int64_t epoch, const std::optional<EvalScores>& scores) {
  const TrainEpochReport er = epoch_report(r, epoch, scores);
  r.result.epochs.push_back(er);
  if (!r.lead()) {
    r.epoch = EpochTotals{};
    return;
  }
  std::ifstream in(r.epochs_path);
  std::stringstream rows;
  rows << in.rdbuf();
  const bool e = er.evaluated;
  rows << er.epoch << "," << csv_number(er.train_loss) << "," << (e ? csv_number(er.eval_loss) : "") << ","
       << (e && er.eval_accuracy >= 0 ? csv_number(er.eval_accuracy) : "") << ","
       << (e && er.eval_macro_f1 >= 0 ? csv_number(er.eval_macro_f1) : "") << "," << csv_number(er.seconds) << ","
       << csv_number(er.tokens_per_s) << "," << csv_number(er.samples_per_s) << "," << er.peak_bytes;
  if (r.teacher) rows << "," << csv_number(er.train_task_loss) << "," << csv_number(er.train_distill_loss);
  rows << "\n";
  model::write_file_atomically(r.epochs_path, rows.str());
  r.epoch = EpochTotals{};
  r.peaks.fold(r.device());
  reset_memory_peaks(r.device());
}

// The resume checkpoint after `step` when due: every save_every steps, or at each epoch's end.
// A stop request (Ctrl-C) saves one whatever the schedule, so that --resume loses no step.
void checkpoint_if_due(TrainRun& r, int64_t step, bool epoch_end, RunClock::time_point run_start, bool stopping) {
  const TrainOptions& o = r.o;
  // The last step always: the work after training (saving the model) may be interrupted, and its
  // resume needs the final weights.
  const bool due = (o.save_every > 0 && (step + 1) % o.save_every == 0) || (o.save_every == 0 && epoch_end) ||
                   step + 1 == r.plan.total_steps;
  if ((!due && !stopping) || !r.lead()) return;  // the weights are the same on every rank: rank 0 saves them
  nlohmann::json state = r.epoch.to_json();
  state["step"] = step + 1;
  state["optimizer_steps"] = r.step->optimizer().steps();
  state["train_seconds"] = r.train_seconds_before + seconds_since(run_start);
  save_run_checkpoint(r.run_dir, step + 1, r.model->params, r.step->optimizer(), state);
}

std::string divergence_message(const TrainRun& r, int64_t step, const StepOutcome& s) {
  return "step " + std::to_string(step) + ": the " +
         (!std::isfinite(s.loss) ? "loss is " + plain_number(s.loss)
                                 : "gradient norm is " + plain_number(s.grad_norm)) +
         "; training stopped before the update, the weights of step " + std::to_string(step) +
         " are kept, and the last checkpoint in " + r.run_dir + " is untouched";
}

// The loop's own state: the log files, the epoch's order, when it started.
struct LoopState {
  TrainingLogger logger;
  std::unique_ptr<TrainingLogger> rank_logger;  // data-parallel: ranks/rank-R/steps.jsonl
  std::vector<int64_t> order;                   // the examples of cached_epoch, in order
  int64_t cached_epoch = -1;
  RunClock::time_point run_start;
  explicit LoopState(const TrainRun& r) : logger(r.lead() ? r.steps_path : "", r.start_step > 0) {
    logger.mirror_to(r.tensorboard.get());
    if (r.world() == 1) return;
    fs::create_directories(r.rank_dir());
    rank_logger = std::make_unique<TrainingLogger>(r.rank_dir() + "/steps.jsonl", r.start_step > 0);
  }
};

// A step that updated the weights: its lines, its share of the epoch's totals, the observer told.
void record_step(TrainRun& r, LoopState& loop, int64_t step, const StepOutcome& s, bool profiled,
                 const TrainObserver& observer) {
  const StepPlan& p = r.plan;
  if (r.lead()) log_step(r, loop.logger, step, s, profiled);
  if (loop.rank_logger) log_rank_step(*loop.rank_logger, step, s);
  if (r.comm) r.comm->heartbeat("step " + std::to_string(step + 1));
  r.series.add(s);
  r.epoch.loss_sum += s.loss, ++r.epoch.loss_count;
  r.epoch.task_loss_sum += s.task_loss, r.epoch.distill_loss_sum += s.distill_loss;
  r.epoch.tokens += s.tokens, r.epoch.samples += s.samples, r.epoch.seconds += s.seconds.total;
  if (observer.on_step && r.lead()) {
    const double elapsed = seconds_since(loop.run_start), done = double(step - r.start_step + 1);
    observer.on_step({step + 1, p.total_steps, step / p.steps_per_epoch, s.loss, p.schedule.lr(step), s.grad_norm,
                      double(s.tokens) / s.seconds.total, elapsed / done * double(p.total_steps - step - 1),
                      r.teacher ? s.task_loss : -1.0});
  }
}

// The load is read at the end of the epoch whose steps bring its window to half a second, or
// the run's last (extended by waiting, as a bench point's is): never once per short epoch,
// where a few ticks say nothing and the waits would add up (400 epochs, 200 s).
void read_load_if_due(TrainRun& r, int64_t step, bool epoch_end) {
  const bool last_step = step == r.plan.total_steps - 1;
  if (!epoch_end || !(last_step || r.load_window->elapsed_s() >= kMinLoadWindowS)) return;
  r.epoch.load = r.load_window->finish(core::num_threads(), last_step ? kMinLoadWindowS : 0.0);
  r.load_window.reset();
}

}  // namespace

int64_t train_loop(TrainRun& r, Profiler& profiler, const TrainObserver& observer) {
  const StepPlan& p = r.plan;
  LoopState loop(r);
  loop.run_start = RunClock::now();
  reset_memory_peaks(r.device());
  profiler.start();
  int64_t step = r.start_step;
  const StopScope stoppable;  // Ctrl-C ends training after the step in flight, checkpointed
  for (; step < p.total_steps; ++step) {
    const int64_t epoch = step / p.steps_per_epoch, in_epoch = step % p.steps_per_epoch;
    if (epoch != loop.cached_epoch)
      loop.order = epoch_order(p.examples, r.o.seed, epoch, r.o.shuffle), loop.cached_epoch = epoch;
    const int64_t first_batch = in_epoch * p.accumulation;
    const int64_t micro = std::min(p.batches_per_epoch, first_batch + p.accumulation) - first_batch;
    if (!r.load_window) r.load_window.emplace();
    const StepOutcome s =
        r.step->run(step, micro, micro_batches_of(r, loop.order, first_batch, epoch), p.schedule.lr(step));
    r.load_window->sample();
    if (!s.updated) {
      r.result.diverged = true;
      r.result.divergence = divergence_message(r, step, s);
      break;
    }
    const bool profiled = profiler.recording();
    profiler.step();
    record_step(r, loop, step, s, profiled, observer);
    const bool epoch_end = in_epoch == p.steps_per_epoch - 1 || step == p.total_steps - 1;
    read_load_if_due(r, step, epoch_end);
    const auto scores = evaluate_if_due(r, loop.logger, step, epoch_end);
    if (epoch_end) end_epoch(r, epoch, scores);
    // Every rank stops after the same step, or the others would wait for it in the next one.
    const bool stop = r.dp ? r.dp->any(stop_requested()) : stop_requested();
    const bool stopping = stop && step + 1 < p.total_steps;
    checkpoint_if_due(r, step, epoch_end, loop.run_start, stopping);
    if (stopping)
      throw Stopped("stopped after step " + std::to_string(step + 1) + " of " + std::to_string(p.total_steps) +
                    "; its checkpoint is in " + r.run_dir + ": continue with tach train --resume " + r.run_dir);
  }
  profiler.stop();
  r.result.train_seconds = r.train_seconds_before + seconds_since(loop.run_start);
  return step;
}

}  // namespace tach::train
