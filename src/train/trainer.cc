// tach train: the run's phases in order (train/train_run.h names the file of each), on every rank.
// Setting up: the options (or a resumed run's), the head's labels, the model and its method, the
// data, the schedule, the run directory, the checkpoint to continue from. Then the steps, and at
// the end the model saved and summary.json.
#include "core/out_of_memory.h"
#include "core/parallel.h"
#include "estimate/out_of_memory_advice.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "tach/train.h"
#include "train/train_options.h"
#include "train/train_run.h"

namespace tach {

namespace {

// The profiler records the schedule's active steps always (for the summary's top ops); traces
// are written only with --profile.
ProfilerOptions profiler_options(const TrainOptions& o) {
  ProfilerOptions popts;
  popts.schedule.skip_first = int(o.profiler_skip_first);
  popts.schedule.wait = int(o.profiler_wait);
  popts.schedule.warmup = int(o.profiler_warmup);
  popts.schedule.active = int(o.profiler_active);
  popts.schedule.repeat = int(o.profiler_repeat);
  popts.memory_logging = true;
  popts.memory_log_steps = o.memory_logging ? int(o.memory_log_steps) : 1;
  return popts;
}

TrainResult train_steps_of_this_rank(train::TrainRun& r, const TrainObserver& observer) {
  train::resume_options(r);
  if (r.result.finished_already) return r.result;
  train::validate_options(r.o);
  if (r.o.threads > 0) set_threads(r.o.threads);  // warns when above the cores
  if (r.o.dtype == "bf16") r.note(train::bf16_training_note(r.o.device));
  if (r.world() > 1)
    r.note(std::to_string(r.world()) + " ranks (MPI), " + std::to_string(core::num_threads()) +
           " thread(s) each, batch " + std::to_string(r.o.batch_size) + " per rank: global batch " +
           std::to_string(r.o.batch_size * r.world()));

  r.src = train::open_training_model(r.o.model, r.o.seed);
  train::choose_task(r);
  train::read_training_examples(r);
  train::resolve_head(r);
  train::build_model(r);
  train::fit_windows_to_model(r);
  train::prepare_data(r);
  r.plan = train::plan_steps(r.o, r.data.size(), r.world());
  train::make_step(r);
  train::create_run_dir(r);
  r.result.run_dir = r.run_dir;
  train::restore_checkpoint(r);
  train::open_tensorboard(r);

  const ProfilerOptions popts = profiler_options(r.o);
  Profiler profiler(popts);
  r.result.steps = train::train_loop(r, profiler, observer);
  train::after_training(r, profiler, popts.schedule.describe());
  if (r.comm) r.comm->barrier("barrier at the end of training");  // rank 0's files are complete for every rank
  return r.result;
}

// A run that runs out of memory (the model, its gradients and moments, a step's activations):
// the allocator's facts, then what tach estimate says the step needs and what would fit.
TrainResult train_this_rank(train::TrainRun& r, const TrainObserver& observer) {
  try {
    return train_steps_of_this_rank(r, observer);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(e.what() +
                      out_of_memory_advice(train_estimate_input(r.o, r.device().str()),
                                           {"--batch-size", "--max-length", "--gradient-checkpointing", "--method"}));
  }
}

}  // namespace

TrainResult run_training(TrainOptions options, const TrainObserver& observer) {
  train::TrainRun r;
  r.o = std::move(options);
  train::join_ranks(r);
  r.note = [&](const std::string& m) {
    if (observer.on_note && r.lead()) observer.on_note(m);
  };
  if (!r.comm) return train_this_rank(r, observer);
  try {
    return train_this_rank(r, observer);
  } catch (const Stopped&) {
    throw;  // every rank stopped after the same step (a collective decision), checkpointed
  } catch (const std::exception& e) {
    // The other ranks would wait for this one until their deadline: end the job now, saying why.
    r.comm->abort_job(e.what(), 1);
  }
}

}  // namespace tach
