// The work after the last step: summary.json from the measured steps at once, then the model
// saved (a Hugging Face model, or a PEFT adapter), then the profiled steps' ops judged against
// this machine's ceilings (measured first when none are cached: a few seconds), each announced.
// A Ctrl-C in that work keeps summary.json and lists what is left in its post_training_pending,
// which --resume does; the op verdicts need the profiled steps, which only the process that ran
// them holds.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "train/save_model.h"
#include "train/train_run.h"

namespace tach::train {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSaveModel = "saving the model";

// Before a piece of that work: a Ctrl-C (held by the StopScope) ends the run there, with
// summary.json written. One during the last piece lets it end.
void stop_if_asked(TrainRun& r, const nlohmann::json& summary, const std::string& before) {
  const bool stop = r.dp ? r.dp->any(stop_requested()) : stop_requested();
  if (!stop) return;
  write_summary(r, summary);
  const bool model_left = !summary.at("post_training_pending").empty();
  throw Stopped("after training's " + std::to_string(r.result.steps) + " steps, before " + before +
                ": summary.json in " + r.run_dir + " has the measured steps" +
                (model_left ? "; tach train --resume " + r.run_dir + " saves the model" : std::string()));
}

// For tests that stop a run at one piece of the work after training: TACH_TEST_HOLD_AT=save-model
// or op-verdicts makes the run wait there (its note printed) for a Ctrl-C, up to a minute.
void hold_for_test(const char* piece) {
  const char* at = std::getenv("TACH_TEST_HOLD_AT");
  if (!at || std::string(at) != piece) return;
  for (int i = 0; i < 6000 && !stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// The profiled ops' trace and op tables (--profile), by module and by op.
void write_profile(const TrainRun& r, const ProfileData& pdata, const std::vector<OpTableRow>& rows,
                   const MachineCeilings& ceilings) {
  const std::string dir = r.o.profiler_output_dir.empty() ? r.run_dir + "/traces" : r.o.profiler_output_dir;
  fs::create_directories(dir);
  // Data-parallel: one trace per rank in one directory, as Holistic Trace Analysis reads them.
  const std::string rank = r.world() > 1 ? "rank-" + std::to_string(r.comm->rank()) + "." : "";
  write_chrome_trace(pdata, dir + "/" + rank + "train_steps.trace.json.gz");
  model::write_file_atomically(
      dir + "/" + rank + "op_table.txt",
      op_table_text(rows, 40) + "\n" + op_table_text(op_table(pdata, "module", "self", ceilings), 40));
}

// The top ops of the profiled steps for the summary; with --profile, the trace and op tables too.
nlohmann::json top_ops(const TrainRun& r, const Profiler& profiler) {
  ProfileData pdata = profiler.data();
  pdata.distributed = {r.comm ? r.comm->backend() : "none", r.comm ? r.comm->rank() : 0, r.world()};
  nlohmann::json top = nlohmann::json::array();
  if (pdata.events.empty()) return top;
  const MachineCeilings ceilings = machine_ceilings(false);
  const auto rows = op_table(pdata, "op", "self", ceilings);
  for (size_t i = 0; i < rows.size() && i < 12; ++i)
    top.push_back({{"op", rows[i].key},
                   {"calls", rows[i].calls},
                   {"self_ms", rows[i].self_ns / 1e6},
                   {"percent_of_steps", rows[i].percent_of_steps},
                   {"bound", bound_name(rows[i].verdict.bound)},
                   {"achieved_fraction", rows[i].verdict.achieved_fraction}});
  if (r.o.profile) write_profile(r, pdata, rows, ceilings);
  return top;
}

void save_trained_model(TrainRun& r) {
  if (r.result.diverged || !r.lead()) return;
  r.result.saved_model = r.o.save_dir.empty() ? r.run_dir + "/model" : r.o.save_dir;
  if (r.model->lora)
    save_peft_adapter(r.result.saved_model, *r.model,
                      r.src.location.dir.empty() ? r.o.model : fs::absolute(r.src.location.dir).string());
  else save_hf_model(r.result.saved_model, *r.model, r.src.config_json, r.problem_type, r.tokenizer_path);
}

void save_model_step(TrainRun& r, nlohmann::json& summary) {
  r.note("training done, summary.json written; saving the model to " +
         (r.o.save_dir.empty() ? r.run_dir + "/model" : r.o.save_dir));
  hold_for_test("save-model");
  stop_if_asked(r, summary, kSaveModel);
  save_trained_model(r);
  summary["saved_model"] = r.result.saved_model;
  summary["post_training_pending"] = nlohmann::json::array();
}

void judge_ops_step(TrainRun& r, const Profiler& profiler, nlohmann::json& summary) {
  r.note(cached_machine_ceilings() ? "judging the profiled steps' ops against this machine's ceilings"
                                   : "measuring this machine's ceilings (a few seconds) to judge the profiled "
                                     "steps' ops");
  hold_for_test("op-verdicts");
  stop_if_asked(r, summary, "judging the profiled steps' ops");
  try {
    summary["top_ops"] = top_ops(r, profiler);
  } catch (const Stopped& e) {  // a Ctrl-C while the ceilings were measured: keep what was done
    write_summary(r, summary);
    throw Stopped("after training's " + std::to_string(r.result.steps) + " steps, " + e.what() + ": summary.json in " +
                  r.run_dir + " has the measured steps");
  }
  summary.erase("top_ops_note");
}

}  // namespace

void after_training(TrainRun& r, const Profiler& profiler, const std::string& profiled_steps) {
  const bool trained_before = r.start_step > 0 && r.start_step >= r.plan.total_steps;
  // The run's memory peaks end here: judging the ops may measure this machine's ceilings, whose
  // buffers go through the same allocator and are tach's own work, not the run's memory.
  r.peaks.fold(r.device());
  nlohmann::json summary =
      trained_before ? summary_of_finished_training(r, profiled_steps) : measured_summary(r, profiled_steps);
  summary["post_training_pending"] = r.result.diverged ? nlohmann::json::array() : nlohmann::json::array({kSaveModel});
  if (!trained_before) summary["top_ops_note"] = kNoOpVerdicts;  // until they are
  const StopScope stoppable;                                     // Ctrl-C ends the run before the next piece of work
  write_summary(r, summary);
  if (!r.result.diverged) save_model_step(r, summary);
  if (!trained_before) judge_ops_step(r, profiler, summary);
  write_summary(r, summary);
}

}  // namespace tach::train
