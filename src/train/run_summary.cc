// summary.json: the figures of a run's steps (medians of the phases and rates, the epochs, the
// memory peaks beside tach estimate's plan, the ranks' medians and the scaling under mpirun), and
// the same figures read back for a run that had finished or was resumed after its last step.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "bench/bench_internal.h"
#include "estimate/out_of_memory_advice.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "train/run_files.h"
#include "train/train_run.h"

namespace tach::train {

namespace fs = std::filesystem;

const char* const kNoOpVerdicts =
    "not judged: the run was stopped before its profiled steps' ops were (tach profile --train judges a step's)";

// The figures a summary.json holds, for what tach train prints.
void result_from_summary(const nlohmann::json& s, TrainResult& res) {
  res.run_dir = s.value("run_dir", res.run_dir);
  res.steps = s.value("steps", int64_t(0));
  res.resumed_from = s.value("resumed_from_step", int64_t(-1));
  res.train_seconds = s.value("train_seconds", 0.0);
  res.step_ms_median = s.value("step_ms_median", 0.0);
  res.step_ms_p90 = s.value("step_ms_p90", 0.0);
  res.tokens_per_s_median = s.value("tokens_per_s_median", 0.0);
  res.samples_per_s_median = s.value("samples_per_s_median", 0.0);
  res.trainable_parameters = s.value("trainable_parameters", int64_t(0));
  res.total_parameters = s.value("parameters", int64_t(0));
  res.saved_model = s.value("saved_model", std::string());
  res.diverged = s.value("diverged", false);
  res.divergence = s.value("divergence", std::string());
  if (s.contains("memory_peak_bytes")) res.peak_bytes = s["memory_peak_bytes"].value("total", int64_t(0));
  if (s.contains("distillation")) {
    res.distill_alpha = s["distillation"].value("alpha", -1.0);
    res.distill_temperature = s["distillation"].value("temperature", -1.0);
  }
}

// A run whose summary.json says every step ran and the work after training was done (a summary
// from before the pending list was recorded counts when its steps reached the total).
bool summary_says_finished(const nlohmann::json& s) {
  if (s.value("schema", "") != "tach.train_summary/1" || s.value("diverged", false)) return false;
  const auto pending = s.find("post_training_pending");
  return s.value("steps", int64_t(0)) >= s.value("total_steps", int64_t(1)) && (pending == s.end() || pending->empty());
}

void write_summary(const TrainRun& r, const nlohmann::json& summary) {
  if (r.lead()) model::write_file_atomically(r.run_dir + "/summary.json", summary.dump(2) + "\n");
}

namespace {

// Every rank's medians of step, data, forward, backward, optimizer, communication and its exposed
// part, and the gradient bytes per step: [world × kRankFields], summed over the ranks (a collective).
constexpr int kRankFields = 8;
std::vector<double> every_ranks_medians(TrainRun& r) {
  const StepSeries& s = r.series;
  std::vector<double> all(size_t(r.world() * kRankFields), 0.0);
  const double bytes_per_step = r.dp ? r.dp->reducer().bucket_bytes() : 0;
  const double values[kRankFields] = {median(s.step_ms), median(s.data_ms), median(s.fwd_ms),     median(s.bwd_ms),
                                      median(s.opt_ms),  median(s.comm_ms), median(s.exposed_ms), bytes_per_step};
  std::copy(values, values + kRankFields, all.data() + r.comm->rank() * kRankFields);
  r.comm->sum(all.data(), int(all.size()), "all_reduce of every rank's step medians");
  return all;
}

// The scaling against a one-process run of the same job (--scaling-reference).
nlohmann::json scaling_summary(const TrainRun& r) {
  const nlohmann::json ref = read_json(r.o.scaling_reference + "/summary.json");
  const nlohmann::json ref_config = read_json(r.o.scaling_reference + "/config.json");
  check(ref_config.value("distributed", nlohmann::json::object()).value("world_size", 1) == 1,
        "--scaling-reference " + r.o.scaling_reference + " is not a one-process run");
  const double one = ref.at("samples_per_s_median").get<double>();
  const double mine = median(r.series.sample_rates);
  return {{"reference", r.o.scaling_reference},
          {"reference_samples_per_s", one},
          {"samples_per_s", mine},
          {"efficiency", mine / std::max(1e-9, one)},
          {"method",
           "this run's median samples/s over the reference's, a one-process run on the same machine "
           "with the same cores; 1.0 is perfect scaling"}};
}

// The distributed section of summary.json: every rank's medians (a collective: every rank calls
// it), the stragglers, the communication's share and how much of it the backward hid, and the
// scaling against a one-process run of the same job when --scaling-reference names one.
nlohmann::json distributed_summary(TrainRun& r) {
  if (r.world() == 1) return {{"world_size", 1}};
  const std::vector<double> all = every_ranks_medians(r);
  nlohmann::json ranks = nlohmann::json::array();
  std::vector<double> step_medians;
  int slowest = 0;
  for (int k = 0; k < r.world(); ++k) {
    const double* v = all.data() + k * kRankFields;
    ranks.push_back({{"rank", k},
                     {"step_ms_median", v[0]},
                     {"data_ms_median", v[1]},
                     {"forward_ms_median", v[2]},
                     {"backward_ms_median", v[3]},
                     {"optimizer_ms_median", v[4]},
                     {"communication_ms_median", v[5]},
                     {"communication_exposed_ms_median", v[6]}});
    step_medians.push_back(v[0]);
    if (v[0] > all[size_t(slowest * kRankFields)]) slowest = k;
  }
  const double bytes_per_step = r.dp ? r.dp->reducer().bucket_bytes() : 0;
  const StepSeries& s = r.series;
  const double step = median(s.step_ms), comm = median(s.comm_ms), exposed = median(s.exposed_ms);
  nlohmann::json out = {
      {"world_size", r.world()},
      {"backend", "mpi"},
      {"ranks", ranks},
      {"stragglers",
       {{"slowest_rank", slowest},
        {"slowest_over_median", all[size_t(slowest * kRankFields)] / std::max(1e-9, median(step_medians))},
        {"method", "each rank's median step time; the slowest against the median over the ranks"}}},
      {"communication_share", comm / std::max(1e-9, step)},
      {"communication_exposed_share", exposed / std::max(1e-9, step)},
      {"overlap_share", comm > 0 ? 1.0 - std::min(1.0, exposed / comm) : 0.0},
      {"all_reduce_bytes_per_step", bytes_per_step},
      {"all_reduce_gb_per_s", comm > 0 ? bytes_per_step / (comm * 1e-3) / 1e9 : 0.0},
      {"method",
       "rank 0's medians over its steps: communication is the gradient all-reduces' time on the communication "
       "thread; exposed is what the step waited for them after its backward; overlap is the rest's share of it. "
       "Bandwidth: gradient bytes per rank over that time (MPI_Allreduce, in place)"}};
  if (!r.o.scaling_reference.empty()) out["scaling"] = scaling_summary(r);
  return out;
}

// What tach estimate plans for this run's step (its batch at --max-length, method, checkpointing
// and precision): the activations it keeps and the whole peak, beside the measured peak. Null
// where there is no estimate for the model.
nlohmann::json planned_memory(const TrainRun& r) {
  const EstimateInput in = train_estimate_input(r.o, r.device().str());
  try {
    const MemoryEstimate e = estimate_memory(in);
    int64_t activations = 0;
    for (const auto& l : e.lines)
      if (l.name.find("activations") != std::string::npos) activations += l.bytes;
    return {{"planned_activation_bytes", activations},
            {"estimate_bytes", e.total_bytes},
            {"method",
             "tach estimate for one micro-batch of --batch-size rows at --max-length tokens (padding to the "
             "longest row uses fewer): its activation lines and its whole peak"}};
  } catch (const Error&) { return nullptr; }
}

// Distillation's epochs also hold the mix's two terms beside train_loss (the mix).
nlohmann::json epochs_json(const std::vector<TrainEpochReport>& epochs) {
  nlohmann::json out = nlohmann::json::array();
  const auto or_null = [](bool has, double v) { return has ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const auto& e : epochs) {
    out.push_back({{"epoch", e.epoch},
                   {"train_loss", e.train_loss},
                   {"eval_loss", or_null(e.evaluated, e.eval_loss)},
                   {"eval_accuracy", or_null(e.evaluated && e.eval_accuracy >= 0, e.eval_accuracy)},
                   {"eval_macro_f1", or_null(e.evaluated && e.eval_macro_f1 >= 0, e.eval_macro_f1)},
                   {"eval_perplexity", or_null(e.evaluated && e.eval_perplexity >= 0, e.eval_perplexity)},
                   {"seconds", e.seconds},
                   {"tokens_per_s", e.tokens_per_s},
                   {"load", e.load.measured ? bench::load_json(bench::load_of(e.load)) : nlohmann::json(nullptr)}});
    if (e.train_task_loss >= 0) out.back()["train_task_loss"] = e.train_task_loss;
    if (e.train_distill_loss >= 0) out.back()["train_distill_loss"] = e.train_distill_loss;
  }
  return out;
}

// The result's medians and peaks from this process's steps; returns the peaks by category.
nlohmann::json fill_result(TrainRun& r) {
  TrainResult& res = r.result;
  const StepSeries& s = r.series;
  nlohmann::json by_cat = nlohmann::json::object();
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    const std::string name(memory_category_name(MemoryCategory(c)));
    by_cat[name] = res.peak_bytes_by_category[name] = r.peaks.by_category[size_t(c)];
  }
  res.peak_bytes = r.peaks.total;
  res.step_ms_median = median(s.step_ms);
  res.step_ms_p90 = p90(s.step_ms);
  res.tokens_per_s_median = median(s.tok_rates);
  res.samples_per_s_median = median(s.sample_rates);
  if (!r.o.distill_from.empty()) {
    res.teacher_ms_median = median(s.teacher_ms), res.forward_ms_median = median(s.fwd_ms);
    res.distill_alpha = r.o.distill_alpha, res.distill_temperature = r.o.distill_temperature;
  }
  res.trainable_parameters = r.model->params.count(true);
  res.total_parameters = r.model->params.count(false);
  return by_cat;
}

// summary.json's figures common to every run.
nlohmann::json step_summary(TrainRun& r, const std::string& profiled_steps) {
  const nlohmann::json by_cat = fill_result(r);
  const TrainResult& res = r.result;
  const StepSeries& s = r.series;
  return {{"schema", "tach.train_summary/1"},
          {"run_dir", r.run_dir},
          {"steps", res.steps},
          {"total_steps", r.plan.total_steps},
          {"resumed_from_step", res.resumed_from},
          {"exec", r.o.exec},
          {"attention", r.step->attention_kernels()},
          {"diverged", res.diverged},
          {"divergence", res.divergence},
          {"train_seconds", res.train_seconds},
          {"note_on_timings",
           "medians over the steps this process ran (a resumed run: after the resume); wall time, "
           "steady clock; tokens are real (unpadded) tokens"},
          {"method", r.o.method},
          {"step_ms_median", res.step_ms_median},
          {"step_ms_p90", res.step_ms_p90},
          {"samples_per_s_median", res.samples_per_s_median},
          {"phase_ms_median",
           {{"data", median(s.data_ms)},
            {"forward", median(s.fwd_ms)},
            {"backward", median(s.bwd_ms)},
            {"optimizer", median(s.opt_ms)}}},
          {"tokens_per_s_median", res.tokens_per_s_median},
          {"epochs", epochs_json(res.epochs)},
          {"memory_peak_bytes",
           {{"total", r.peaks.total},
            {"by_category", by_cat},
            {"method",
             "tach's allocator, exact bytes, from the first step to the end (evaluation "
             "included); the model's own weights, gradients and AdamW moments are f32"}}},
          {"optimizer_state_bytes", r.step->optimizer().state_bytes()},
          {"parameters", res.total_parameters},
          {"trainable_parameters", res.trainable_parameters},
          {"nf4_weight_bytes", r.model->params.nf4_bytes()},
          {"memory_plan", planned_memory(r)},
          {"top_ops", nlohmann::json::array()},
          {"distributed", distributed_summary(r)},
          {"profiled_steps", profiled_steps},
          {"saved_model", ""}};
}

}  // namespace

nlohmann::json measured_summary(TrainRun& r, const std::string& profiled_steps) {
  nlohmann::json out = step_summary(r, profiled_steps);
  if (!r.o.distill_from.empty()) {  // the teacher's phase beside the others, and what it taught with
    out["phase_ms_median"]["teacher"] = median(r.series.teacher_ms);
    out["distillation"] = distillation_summary(r.o);
  }
  return out;
}

// The summary of a run resumed after its last step: what the process that trained wrote (it was
// stopped in the work after training), or, without one, the medians of every step in steps.jsonl.
nlohmann::json summary_of_finished_training(TrainRun& r, const std::string& profiled_steps) {
  if (fs::exists(r.run_dir + "/summary.json")) {
    const nlohmann::json s = read_json(r.run_dir + "/summary.json");
    result_from_summary(s, r.result);
    r.result.resumed_from = r.start_step;
    return s;
  }
  std::ifstream in(r.steps_path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j;  // {"metrics": {...}, "step": N}
    try {
      j = nlohmann::json::parse(line).at("metrics");
    } catch (const std::exception&) { continue; }  // a line cut short by a kill
    if (!j.contains("step_ms")) continue;          // an evaluation's line
    const double ms = j["step_ms"], t = ms / 1e3;
    r.series.step_ms.push_back(ms);
    r.series.data_ms.push_back(j.value("data_ms", 0.0));
    r.series.teacher_ms.push_back(j.value("teacher_ms", 0.0));
    r.series.fwd_ms.push_back(j.value("forward_ms", 0.0));
    r.series.bwd_ms.push_back(j.value("backward_ms", 0.0));
    r.series.opt_ms.push_back(j.value("optimizer_ms", 0.0));
    r.series.tok_rates.push_back(j.value("tokens", 0.0) / t);
    r.series.sample_rates.push_back(j.value("samples", 0.0) / t);
    r.peaks.total = std::max(r.peaks.total, int64_t(j.value("memory_peak_bytes", 0.0)));
  }
  r.note("no summary.json in " + r.run_dir + ": its figures are the medians of the " +
         std::to_string(r.series.step_ms.size()) + " steps in steps.jsonl");
  nlohmann::json s = measured_summary(r, profiled_steps);
  s["note_on_timings"] = "medians over every step in steps.jsonl; wall time, steady clock; tokens are real (unpadded)";
  s["top_ops_note"] = kNoOpVerdicts;
  return s;
}

}  // namespace tach::train
