// Another engine's training point (tach bench --train --engine): tach's own steps on the point's
// batch first (the reference losses, and the FLOPs MFU counts), then the worker loaded to train
// from the same checkpoint and fed the same ids and targets; its first steps' losses are compared
// with tach's, then its steps are timed under tach's stopping rule, each with its phases.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "bench/engine_point.h"
#include "dist/communicator.h"
#include "engines/engine_protocol.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "tach/plain_number.h"

namespace fs = std::filesystem;

namespace tach::bench {

using namespace engine_detail;

namespace {

// The steps whose losses are compared: the first call (prepare) and the next two.
constexpr int kLossCheckSteps = 3;

std::string protocol_task(Head head) {
  switch (head) {
    case Head::token_classification: return "token-classification";
    case Head::question_answering: return "question-answering";
    case Head::masked_lm: return "masked-lm";
    default: return "sequence-classification";
  }
}

// The inputs request: tach's ids, mask and segments, and its targets as the task's labels.
nlohmann::json train_inputs_request(const TrainReference& ref) {
  const TokenBatch& b = ref.batch;
  nlohmann::json j = {{"op", "inputs"},
                      {"input_ids", ids_json(b.input_ids)},
                      {"attention_mask", ids_json(b.attention_mask)}};
  if (b.token_type_ids.defined()) j["token_type_ids"] = ids_json(b.token_type_ids);
  const train::Targets& t = ref.targets;
  if (ref.head == Head::question_answering) {
    j["start_positions"] = t.start_positions;
    j["end_positions"] = t.end_positions;
  } else if (ref.head == Head::token_classification || ref.head == Head::masked_lm) {
    const int64_t T = b.seq_len();
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t r = 0; r < b.batch(); ++r)
      rows.push_back(std::vector<int32_t>(t.token_labels.begin() + r * T, t.token_labels.begin() + (r + 1) * T));
    j["labels"] = rows;
  } else {
    check(ref.problem_type.empty() || ref.problem_type == "single_label_classification",
          "another engine's training point takes one class per row; this head's problem_type is " + ref.problem_type +
              " (train it on tach's engine)");
    j["labels"] = t.classes;
  }
  return j;
}

// The losses of the worker's first steps against tach's (the reply's null: a non-finite loss).
// Compared where both engines start alike: the same weights (no new head), no dropout (each engine
// draws its own masks), and for LoRA the first step only (each draws its own A matrices; B starts
// at zero, so the first step is the base model's).
void check_losses(const TrainReference& ref, const std::vector<double>& engine, const BenchConfig& config,
                  const PointKey& key, PointResult::EngineRun& e) {
  e.tach_losses = ref.losses;
  e.engine_losses = engine;
  const bool adapters = key.method != "full";
  const size_t compared = std::min(adapters ? size_t(1) : ref.losses.size(), engine.size());
  e.outputs_name =
      compared == 1 ? "loss of the first step" : "losses of the first " + std::to_string(compared) + " steps";
  if (config.train.dropout) {
    e.outputs_note =
        "not compared: dropout is on (the model's rates), and each engine draws its own masks; "
        "--no-dropout compares the losses";
    return;
  }
  if (!ref.head_from_checkpoint) {
    e.outputs_note = "not compared: the head is new, and each engine initialises its own";
    return;
  }
  double diff = 0, largest = 1;
  for (size_t i = 0; i < compared; ++i) {
    diff = std::max(diff, std::isfinite(engine[i]) ? std::abs(engine[i] - ref.losses[i]) : INFINITY);
    largest = std::max(largest, std::abs(ref.losses[i]));
  }
  // Relative to the loss (at least 1): f32 steps differ by the libraries' reduction orders, bf16
  // and f16 round every activation; NF4 bases are the same codes, dequantized alike.
  const double relative = key.dtype == "bf16" ? 5e-2 : key.dtype == "f16" ? 1e-2 : 2e-3;
  e.max_abs_diff = diff;
  e.tolerance = relative * largest;
  e.outputs_checked = true;
  e.outputs_agree = diff <= e.tolerance;
  e.loss_steps_compared = int(compared);
  if (adapters) e.outputs_note = "the first step only: each engine draws its own LoRA A matrices (B starts at zero)";
}

double loss_at(const nlohmann::json& v) { return v.is_number() ? v.get<double>() : NAN; }

std::vector<double> phase_ms(const std::vector<std::pair<nlohmann::json, int64_t>>& replies, const char* phase,
                             const std::string& engine) {
  std::vector<double> ms;
  for (const auto& [reply, counted] : replies) {
    const auto phases = reply.find("phases_ns");
    check(phases != reply.end() && phases->is_object() && phases->contains(phase) && phases->at(phase).is_array() &&
              int64_t(phases->at(phase).size()) >= counted,
          engine + "'s reply to 'time' has no " + phase + " phase for each step");
    for (int64_t i = 0; i < counted; ++i) ms.push_back(loss_at(phases->at(phase)[size_t(i)]) * 1e-6);
  }
  return ms;
}

}  // namespace

PointResult EngineWorkers::run_train_point(const PointKey& key, const TrainInputs* inputs, int threads,
                                           const BenchObserver& observer) {
  PointResult r = engine_point_start(config_, key, inputs ? inputs->name : "synthetic", threads);
  try {
    check(!dist::Communicator::world().distributed(),
          "another engine's training steps run in one process: sweep engine " + key.engine + " without mpirun");
    check(!key.gradient_checkpointing || key.engine != "python-matmul",
          "python-matmul keeps no activations to checkpoint: its points run with gradient checkpointing off");
    const TrainReference ref = train_reference(config_, key, inputs, kLossCheckSteps);
    // tach's model is gone: its allocator's cached blocks go back too, for the worker's model.
    release_cached_memory(Device::cpu());
    if (const Device device = parse_device(key.device); device.kind == DeviceKind::cuda) release_cached_memory(device);
    // Each point trains a fresh model from the checkpoint in a fresh worker (a worker loads once):
    // the weights, the optimizer's moments and the worker's peak memory are the point's own.
    workers_.erase(key.engine);
    Worker& w = started(key.engine);
    measure_train(w, key, ref, threads, r, observer);
    workers_.erase(key.engine);
  } catch (const engines::WorkerFailure& e) {
    workers_.erase(key.engine);  // a fresh worker for the next point
    return failed_with(r, std::string("engine ") + key.engine + ": " + e.what());
  } catch (const Error& e) { return failed_with(r, e.what()); }
  return r;
}

void EngineWorkers::measure_train(Worker& w, const PointKey& key, const TrainReference& ref, int threads,
                                  PointResult& r, const BenchObserver& observer) {
  engines::EngineClient& c = *w.client;
  PointResult::EngineRun& e = r.engine_run;
  const TrainSweep& t = config_.train;
  e.versions = versions_text(c.ready().versions);
  e.task = protocol_task(ref.head);
  e.ping_round_trip_us = w.ping_us;
  const nlohmann::json train = {{"method", key.method},
                                {"lr", t.lr},
                                {"weight_decay", t.weight_decay},
                                {"adam_beta1", t.adam_beta1},
                                {"adam_beta2", t.adam_beta2},
                                {"adam_eps", t.adam_eps},
                                {"max_grad_norm", t.max_grad_norm},
                                {"seed", config_.seed},
                                {"num_labels", ref.labels},
                                {"dropout", t.dropout},
                                {"gradient_checkpointing", key.gradient_checkpointing},
                                {"lora_r", t.lora_r},
                                {"lora_alpha", t.lora_alpha},
                                {"lora_dropout", t.dropout ? t.lora_dropout : 0.0},
                                {"lora_targets", ref.lora_targets},
                                {"lora_modules_to_save", ref.modules_to_save}};
  load(w, key, "train " + key.id(), load_request(config_, key, e.task, threads, train), e);
  r.train.parameters = int64_t(number_or(w.load_reply, "parameters", 0));
  r.train.trainable_parameters = int64_t(number_or(w.load_reply, "trainable_parameters", 0));
  (void)c.call(train_inputs_request(ref));

  // The first steps, untimed for the results: the first call (torch.compile compiles in it: a
  // one-time cost), then the rest of the loss check; the warm-up steps after them.
  const nlohmann::json first = c.call({{"op", "prepare"}});
  e.first_call_s = number_or(first, "first_call_s", 0);
  std::vector<double> losses = {first.contains("loss") ? loss_at(first.at("loss")) : NAN};
  const int64_t rest = kLossCheckSteps - 1;
  const nlohmann::json checked = c.call({{"op", "time"}, {"calls", rest}},
                                        engines::request_deadline_s("time", rest, std::max(e.first_call_s, 1.0)));
  if (const auto l = checked.find("loss"); l != checked.end() && l->is_array())
    for (const auto& v : *l) losses.push_back(loss_at(v));
  check_losses(ref, losses, config_, key, e);
  if (config_.warmup_runs > 0)
    (void)c.call({{"op", "time"}, {"calls", config_.warmup_runs}},
                 engines::request_deadline_s("time", config_.warmup_runs, std::max(e.first_call_s, 1.0)));

  const int64_t padded = ref.batch.batch() * ref.batch.seq_len();
  r.padded_tokens_per_batch = double(padded);
  r.real_tokens_per_batch = double(ref.batch.real_tokens());
  const TimedCalls timed = time_under_rule(c, config_, key, threads, e.first_call_s, r, observer);
  std::vector<double> step_ms, sample_ms;
  for (double s : timed.seconds) step_ms.push_back(s * 1e3), sample_ms.push_back(s * 1e3 / double(key.batch));
  std::vector<double> measured_losses;
  for (const auto& [reply, counted] : timed.replies) {
    const auto l = reply.find("loss");
    check(l != reply.end() && l->is_array() && int64_t(l->size()) >= counted,
          key.engine + "'s reply to 'time' has no loss for each step");
    for (int64_t i = 0; i < counted; ++i) measured_losses.push_back(loss_at(l->at(size_t(i))));
  }
  for (size_t i = 0; i < measured_losses.size(); ++i)
    check(std::isfinite(measured_losses[i]), "the loss is " + plain_number(measured_losses[i]) + " at measured step " +
                                                 std::to_string(i) + ": lower --lr");
  r.train.loss_first = measured_losses.front();
  r.train.loss_last = measured_losses.back();
  r.batch_latency_samples_ms = step_ms;
  r.batch_latency_ms = distribution(step_ms);
  r.sample_latency_ms = distribution(sample_ms);
  r.train.data_ms = distribution(phase_ms(timed.replies, "data", key.engine));
  r.train.forward_ms = distribution(phase_ms(timed.replies, "forward", key.engine));
  r.train.backward_ms = distribution(phase_ms(timed.replies, "backward", key.engine));
  r.train.optimizer_ms = distribution(phase_ms(timed.replies, "optimizer", key.engine));
  // MFU as a tach point takes it: the model FLOPs of tach's profiled step on the same batch, over
  // the median step, against the measured GEMM ceiling of the point's precision.
  r.train.model_flops_per_step = ref.model_flops_per_step;
  r.flops_per_batch = ref.model_flops_per_step;
  r.train.ceiling_gflops_per_s = ref.ceiling_gflops_per_s;
  r.train.ceiling_under_load = ref.ceiling_under_load;
  r.train.ceiling_other_cores = ref.ceiling_other_cores;
  r.train.ceiling_load_average = ref.ceiling_load_average;
  r.train.precision = key.dtype == "f32" ? "f32" : key.dtype + " autocast (f32 weights), the engine's";
  set_throughput_from_median(r);
  r.finished_at = utc_now_iso();
}

}  // namespace tach::bench
