// One point of a training sweep (tach bench --train): the model set up for the point's method,
// warm-up steps, measured steps under the stopping rule (every step's latency and phases kept),
// then one profiled step for the step's FLOPs and the GEMMs' efficiency. The step is the one tach
// train and tach profile --train run (train/train_step.h).
#include <chrono>
#include <cstdio>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <random>

#include "bench/bench_internal.h"
#include "cpu/train_gemm.h"
#include "dist/communicator.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/stats.h"
#include "tach/plain_number.h"
#include "train/data_parallel.h"
#include "train/lora.h"
#include "train/train_data.h"
#include "train/train_step.h"
#include "train/training_method.h"
#include "train/training_model.h"

namespace tach::bench {

namespace {

// The head a point trains (--task): the checkpoint's, or transformers' default two labels for a
// bare body (the dataset's labels when it has them and the checkpoint has no head).
struct TaskHead {
  Head head = Head::sequence_classification;
  std::vector<std::string> labels;
  std::string problem_type;
};

TaskHead head_of(const train::TrainingModelSource& src, const std::string& task, const TrainInputs* inputs) {
  TaskHead h{train_task_head(task), src.id2label(), src.problem_type()};
  if (h.head != Head::sequence_classification) {
    // A token classifier's own labels where the checkpoint is one; the other heads have none.
    if (h.head != Head::token_classification || !src.has_head(Head::token_classification)) h.labels.clear();
    if (h.labels.empty()) h.labels = {"LABEL_0", "LABEL_1"};
    h.problem_type.clear();
    return h;
  }
  if (!src.checkpoint_has_head && inputs) h.labels = inputs->labels;
  if (h.labels.empty()) h.labels = {"LABEL_0", "LABEL_1"};
  if (h.problem_type.empty()) h.problem_type = h.labels.size() == 1 ? "regression" : "single_label_classification";
  return h;
}

// Full rows of random ids (every token real), and random targets for the head: a class (or
// values) per row; a label per token; a start and an end position per row; for the masked LM
// 15% of the tokens (at least one per batch) chosen, each labelled with its own id (the
// collator's replacement of the inputs changes no cost, so the ids stay).
struct SyntheticRows {
  TokenBatch batch;
  train::Targets targets;
};

SyntheticRows synthetic_rows(const train::TrainableModel& model, int64_t vocab, const TaskHead& head, int64_t B,
                             int64_t T, uint64_t seed) {
  SyntheticRows s;
  ModelInfo info;
  info.vocab_size = vocab;
  info.type_vocab_size = model.uses_token_types() ? 1 : 0;
  s.batch = synthetic_batch(info, B, T, seed);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const auto L = int64_t(head.labels.size());
  if (head.head == Head::token_classification) {
    for (int64_t i = 0; i < B * T; ++i) s.targets.token_labels.push_back(int32_t(rng() % uint64_t(L)));
  } else if (head.head == Head::question_answering) {
    for (int64_t b = 0; b < B; ++b) {
      const auto start = int32_t(rng() % uint64_t(T));
      s.targets.start_positions.push_back(start);
      s.targets.end_positions.push_back(std::min<int32_t>(int32_t(T) - 1, start + int32_t(rng() % 4)));
    }
  } else if (head.head == Head::masked_lm) {
    const int32_t* ids = s.batch.input_ids.data<int32_t>();
    s.targets.token_labels.assign(size_t(B * T), -100);
    for (int64_t i = 0; i < B * T; ++i)
      if (rng() % 100 < 15) s.targets.token_labels[size_t(i)] = ids[i];
    if (B * T > 0) s.targets.token_labels[0] = ids[0];
  } else if (head.problem_type == "regression") {
    std::normal_distribution<float> n(0.f, 1.f);
    for (int64_t i = 0; i < B; ++i) s.targets.values.push_back(n(rng));
  } else if (head.problem_type == "multi_label_classification") {
    for (int64_t i = 0; i < B * L; ++i) s.targets.values.push_back(float(rng() & 1));
  } else {
    for (int64_t i = 0; i < B; ++i) s.targets.classes.push_back(int32_t(rng() % uint64_t(L)));
  }
  return s;
}

// A point's model, built with its method, from the checkpoint's bytes (released once built).
struct PointModel {
  train::TrainingModelSource src;
  TaskHead head;
  std::unique_ptr<train::TrainableModel> model;
  int64_t vocab = 0;
};

PointModel build_point_model(const BenchConfig& config, const PointKey& key, const TrainInputs* inputs, Device device) {
  PointModel pm{train::open_training_model(config.model, config.seed), {}, nullptr, 0};
  pm.head = head_of(pm.src, config.train.task, inputs);
  pm.model = train::build_trainable_model(pm.src, pm.head.labels, pm.head.problem_type, config.seed, nullptr,
                                          pm.head.head, device);
  train::MethodOptions mo;
  mo.method = key.method;
  mo.lora.r = config.train.lora_r;
  mo.lora.alpha = float(config.train.lora_alpha);
  mo.lora.dropout = float(config.train.lora_dropout);
  (void)train::apply_training_method(*pm.model, *pm.src.family, mo, config.seed);
  pm.vocab = pm.src.is_decoder() ? pm.src.decoder.vocab_size : pm.src.config.vocab_size;
  pm.src.store.reset();
  return pm;
}

train::StepSettings step_settings(const BenchConfig& c, const PointKey& key, const train::TrainingModelSource& src,
                                  const TaskHead& head, bool has_lora) {
  const TrainSweep& t = c.train;
  train::StepSettings s;
  s.fused = key.exec == "fused";
  s.gradient_checkpointing = key.gradient_checkpointing;
  s.dropout = t.dropout ? src.dropout(head.head) : train::DropoutRates{};
  s.dropout.seed = c.seed;
  if (t.dropout && has_lora) s.dropout.lora = float(t.lora_dropout);
  s.adam.beta1 = float(t.adam_beta1);
  s.adam.beta2 = float(t.adam_beta2);
  s.adam.eps = float(t.adam_eps);
  s.adam.weight_decay = float(t.weight_decay);
  s.max_grad_norm = t.max_grad_norm;
  s.problem_type = head.problem_type;
  s.precision = key.dtype == "bf16" ? DType::bf16 : DType::f32;  // the step runs its GEMMs at it
  return s;
}

bool is_gemm(const std::string& op) {
  return op == "linear" || op == "linear_backward" || op == "linear_nf4" || op == "linear_nf4_backward";
}

// One profiled step (its data returned, for --profile's traces): the ops' declared FLOPs (model: without a checkpointed layer's recompute),
// and the GEMMs' share of the op time and their achieved fraction of the ceiling.
ProfileData profile_one_step(train::TrainingStep& step, int64_t index, const train::MicroBatchSource& next, double lr,
                             double ceiling_flops, PointResult::Train& t) {
  ProfilerOptions o;
  o.schedule = {0, 0, 0, 1, 1};
  o.memory_logging = false;
  Profiler p(o);
  p.start();
  (void)step.run(index, 1, next, lr);
  p.step();
  p.stop();
  ProfileData data = p.data();  // not const: returned by move
  double flops = 0, recompute = 0, op_ns = 0, gemm_ns = 0, gemm_flops = 0;
  for (const ProfileEvent& e : data.events) {
    if (e.kind != EventKind::op) continue;
    flops += e.flops;
    if (e.path.find("recompute") != std::string::npos) recompute += e.flops;
    op_ns += e.self_ns;
    if (is_gemm(e.name)) gemm_ns += e.self_ns, gemm_flops += e.flops;
  }
  t.hardware_flops_per_step = flops;
  t.model_flops_per_step = flops - recompute;
  if (op_ns > 0) t.gemm_time_share = gemm_ns / op_ns;
  if (gemm_ns > 0 && ceiling_flops > 0) t.gemm_efficiency = gemm_flops / (gemm_ns * 1e-9) / ceiling_flops;
  return data;
}

// One measured step's figures, tagged step_METRIC/<point id> at the measured step's index.
void log_step(TensorBoardWriter& tb, const std::string& point, int64_t index, const train::StepOutcome& s, double lr,
              Device device) {
  const auto put = [&](const std::string& metric, double v) { tb.scalar("step_" + metric + "/" + point, v, index); };
  put("loss", s.loss);
  put("learning_rate", lr);
  put("grad_norm", s.grad_norm);
  put("ms", s.seconds.total * 1e3);
  put("data_ms", s.seconds.data * 1e3);
  put("forward_ms", s.seconds.forward * 1e3);
  put("backward_ms", s.seconds.backward * 1e3);
  put("optimizer_ms", s.seconds.optimizer * 1e3);
  put("tokens_per_s", double(s.tokens) / s.seconds.total);
  put("samples_per_s", double(s.samples) / s.seconds.total);
  const MemoryStats mem = memory_stats(device);  // the step's memory: its device's allocator
  for (int c = 0; c < kMemoryCategoryCount; ++c)
    put("memory_" + std::string(memory_category_name(MemoryCategory(c))) + "_bytes",
        double(mem.by_category[size_t(c)].current));
}

}  // namespace

Head train_task_head(const std::string& task) {
  return task == "mlm"                    ? Head::masked_lm
         : task == "token-classification" ? Head::token_classification
         : task == "question-answering"   ? Head::question_answering
                                          : Head::sequence_classification;
}

PointResult run_train_point(const BenchConfig& config, const PointKey& key, const TrainInputs* inputs,
                            const BenchObserver& observer, const std::string& run_dir, TensorBoardWriter* tensorboard) {
  PointResult r;
  r.key = key;
  r.input = inputs ? inputs->name : "synthetic";
  r.warmup_runs = config.warmup_runs;
  const bool bf16 = key.dtype == "bf16";
  // Everything the step owns lives on the point's device: weights, gradients, moments, activations.
  const Device device = parse_device(key.device);
  const bool on_gpu = device.kind == DeviceKind::cuda;
  const cpu::TrainPrecisionScope precision(bf16 ? cpu::TrainPrecision::bf16 : cpu::TrainPrecision::f32);
  r.train.precision = !bf16                           ? "f32"
                      : on_gpu                        ? "bf16 (cuBLASLt bf16 inputs, f32 accumulation)"
                      : cpu::bf16_train_gemm_onednn() ? "bf16 (oneDNN bf16 matmul, f32 accumulation)"
                                                      : "bf16 emulated (inputs rounded, f32 GEMM)";
  release_cached_memory(Device::cpu());
  if (on_gpu) release_cached_memory(device);

  // The point's own model: weights, gradients and AdamW moments are this point's memory.
  PointModel built = build_point_model(config, key, inputs, device);
  train::TrainingModelSource& src = built.src;
  const TaskHead& head = built.head;
  std::unique_ptr<train::TrainableModel>& model = built.model;
  const int64_t vocab = built.vocab;
  // The point's memory is its steps', as tach train's and tach estimate's: from here, with the
  // model built and the checkpoint's bytes it was built from released.
  reset_memory_peaks(Device::cpu());
  if (on_gpu) reset_memory_peaks(device);
  r.peak_rss_is_per_point = reset_peak_rss();
  r.train.parameters = model->params.count(false);
  r.train.trainable_parameters = model->params.count(true);
  train::StepSettings settings = step_settings(config, key, src, head, model->lora != nullptr);
  // Under mpirun: the gradients summed over the ranks in DDP's 25 MB buckets, as tach train's are.
  dist::Communicator& comm = dist::Communicator::world();
  check(!comm.distributed() || !on_gpu,
        "device " + key.device +
            " under mpirun: data-parallel training sums its gradients in host memory, so each "
            "rank trains on the CPU in this version; sweep one process on the GPU, or --device cpu");
  std::unique_ptr<train::DataParallel> dp;
  if (comm.distributed()) dp = std::make_unique<train::DataParallel>(comm, model->params, int64_t(25) << 20);
  settings.data_parallel = dp.get();
  const int rank = comm.rank(), ranks = comm.size();
  r.train.world_size = ranks;
  train::TrainingStep step(*model, settings);

  // The batches: one synthetic batch for every step (each rank its own rows), or the dataset's
  // examples in a seeded order, each global batch of ranks x batch rows interleaved over the ranks.
  const SyntheticRows synthetic =
      inputs ? SyntheticRows{}
             : synthetic_rows(*model, vocab, head, key.batch, key.seq_len, config.seed + uint64_t(rank));
  const train::TrainData* data = inputs ? &inputs->data_for(key.seq_len) : nullptr;
  std::vector<int64_t> order;
  if (data) order = train::epoch_order(data->size(), config.seed, 0, true);
  int64_t cursor = 0, padded = 0;
  const train::MicroBatchSource next = [&](int64_t, TokenBatch* b, train::Targets* t) {
    if (!data) {
      *b = synthetic.batch;
      *t = synthetic.targets;
    } else {
      std::vector<int64_t> global(size_t(key.batch * ranks));
      for (auto& i : global) i = order[size_t(cursor++ % int64_t(order.size()))];
      train::make_batch(*data, train::rank_rows(global, rank, ranks), b, t);  // padded to its longest row
    }
    padded = b->batch() * b->seq_len();
  };
  const double lr = config.train.lr;
  int64_t index = 0;
  for (int i = 0; i < config.warmup_runs; ++i) (void)step.run(index++, 1, next, lr);

  std::vector<double> step_s, data_ms, fwd_ms, bwd_ms, opt_ms, comm_ms, exposed_ms, gpu_ms;
  double measured_s = 0, real_tokens = 0, padded_tokens = 0, samples = 0;
  // On a GPU, each step's time between events queued before and after it (as an inference point's).
  DeviceTimer gpu_timer(device);
  RaplEnergy rapl;
  if (rapl.available()) (void)rapl.joules();  // starts the counters here
  // On a GPU, NVML's energy counter read after each measured step (outside the step's timing).
  std::optional<NvmlEnergyCounter> nvml;
  std::optional<EnergyCounterSteps> energy_steps;
  if (on_gpu && config.gpu_energy_window_s > 0) {
    nvml.emplace(device);
    if (nvml->found()) energy_steps.emplace(nvml->reader());
  }
  if (observer.on_measure_begin) observer.on_measure_begin(key);
  CpuLoadWindow load_window;  // other processes' CPU use while the steps are timed
  const auto wall0 = std::chrono::steady_clock::now();
  for (;;) {
    if (on_gpu) gpu_timer.start();
    const train::StepOutcome s = step.run(index++, 1, next, lr);  // returns once the loss is read: the work is done
    if (on_gpu) {
      gpu_timer.stop();
      gpu_ms.push_back(gpu_timer.elapsed_ms());
    }
    check(std::isfinite(s.loss), "the loss is " + plain_number(s.loss) + " at measured step " +
                                     std::to_string(step_s.size()) + ": lower --lr");
    if (step_s.empty()) {
      r.train.loss_first = s.loss;
      // A GPU point says which attention kernels its steps ran (cuDNN's fused attention or tach's,
      // and why); on the CPU they are tach's.
      if (on_gpu) r.train.precision += "; attention: " + step.attention_kernels();
    }
    r.train.loss_last = s.loss;
    step_s.push_back(s.seconds.total);
    data_ms.push_back(s.seconds.data * 1e3);
    fwd_ms.push_back(s.seconds.forward * 1e3);
    bwd_ms.push_back(s.seconds.backward * 1e3);
    opt_ms.push_back(s.seconds.optimizer * 1e3);
    comm_ms.push_back(s.seconds.communication * 1e3);
    exposed_ms.push_back(s.seconds.communication_exposed * 1e3);
    if (tensorboard) log_step(*tensorboard, key.id(), int64_t(step_s.size()) - 1, s, lr, device);
    measured_s += s.seconds.total;
    real_tokens += double(s.tokens);  // every rank's
    samples += double(s.samples);
    padded_tokens += double(padded);
    r.stopped_by = stop_reason(config.stop, step_s, measured_s);
    // Every rank stops after the same step: rank 0's rule decides.
    if (dp) r.stopped_by = comm.broadcast(r.stopped_by, "broadcast of the stopping rule's decision");
    if (energy_steps) energy_steps->read_after_run();
    if (!r.stopped_by.empty()) break;
    load_window.sample();
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (on_gpu) {
    // The measured steps' own counter steps; more steps after them only where those did not
    // span two steps of the counter a window apart (then the source says how many).
    GpuEnergy e;  // none without a counter: the record says why
    if (energy_steps)
      e = finish_energy_window(
          *energy_steps, [&] { (void)step.run(index++, 1, next, lr); }, config.gpu_energy_window_s);
    const NvmlEnergyRecord nvml_energy = nvml_energy_record(e, EnergyRuns::training_steps, int64_t(step_s.size()),
                                                            nvml ? nvml->why_not() : kEnergyWindowOff);
    r.energy_j = nvml_energy.j;
    r.energy_source = nvml_energy.source;
  } else if (rapl.available()) {
    r.energy_j = rapl.joules();
    r.energy_source = "RAPL (package + DRAM) over the measured steps, whole machine";
  } else {
    r.energy_source = "unavailable: " + rapl.unavailable_reason();
  }
  record_load(r, load_window);  // after the energy: a short window is extended by waiting
  const auto n = double(step_s.size());
  if (observer.on_measure_end) observer.on_measure_end(key, int64_t(samples));

  // Memory after the measured steps: the point's weights, gradients, moments and activations.
  const ProcessMemory pm = read_process_memory();
  r.rss_bytes = pm.rss_bytes;
  r.peak_rss_bytes = pm.peak_rss_bytes;
  if (on_gpu)
    for (const CudaDeviceInfo& d : cuda_devices())
      if (d.index == device.index) r.device_memory_used_bytes = int64_t(d.total_bytes - d.free_bytes);
  record_allocator(r, device);

  r.measured_runs = int(step_s.size());
  std::vector<double> batch_ms, sample_ms;
  const double global_batch = double(key.batch * ranks);
  for (double s : step_s) batch_ms.push_back(s * 1e3), sample_ms.push_back(s * 1e3 / global_batch);
  r.batch_latency_samples_ms = batch_ms;
  r.batch_latency_ms = distribution(batch_ms);
  r.sample_latency_ms = distribution(sample_ms);
  if (!gpu_ms.empty()) r.gpu_time_ms = distribution(gpu_ms);
  r.train.data_ms = distribution(data_ms);
  r.train.forward_ms = distribution(fwd_ms);
  r.train.backward_ms = distribution(bwd_ms);
  r.train.optimizer_ms = distribution(opt_ms);
  if (dp) {
    r.train.communication_ms = distribution(comm_ms);
    r.train.communication_exposed_ms = distribution(exposed_ms);
  }
  r.real_tokens_per_batch = real_tokens / n;
  r.padded_tokens_per_batch = padded_tokens / n;
  if (r.energy_j >= 0) {
    r.energy_j_per_sample = r.energy_j / samples;
    r.energy_j_per_token = real_tokens > 0 ? r.energy_j / real_tokens : -1;
  }
  r.measured_wall_s = wall_s;
  r.timer_overhead_ns = timer_overhead_seconds() * 1e9;
  r.bookkeeping_ms = (wall_s - measured_s) * 1e3;

  // The FLOPs and the GEMMs, from one more step under the profiler (never a measured one).
  const MachineCeilings ceilings = on_gpu ? as_machine_ceilings(measure_gpu_ceilings(device)) : machine_ceilings();
  const double ceiling = bf16 ? ceilings.gemm_bf16_flops : ceilings.gemm_f32_flops;
  const ProfileData profiled = profile_one_step(step, index, next, lr, ceiling, r.train);
  if (config.profile) write_point_traces(profiled, key, run_dir);
  r.flops_per_batch = r.train.model_flops_per_step;
  r.train.ceiling_gflops_per_s = ceiling / 1e9;
  r.train.ceiling_under_load = ceilings.under_load;
  if (ceilings.load_measured) {
    r.train.ceiling_other_cores = ceilings.other_cores;
    r.train.ceiling_load_average = ceilings.load_average;
  }
  set_throughput_from_median(r);  // samples/s, tokens/s, GFLOP/s and MFU over the median step
  r.finished_at = utc_now_iso();
  return r;
}

TrainReference train_reference(const BenchConfig& config, const PointKey& key, const TrainInputs* inputs, int steps) {
  TrainReference ref;
  const Device device = parse_device(key.device);
  const bool on_gpu = device.kind == DeviceKind::cuda, bf16 = key.dtype == "bf16";
  const cpu::TrainPrecisionScope precision(bf16 ? cpu::TrainPrecision::bf16 : cpu::TrainPrecision::f32);
  PointModel pm = build_point_model(config, key, inputs, device);
  const TaskHead& head = pm.head;
  ref.head = head.head;
  ref.labels = int64_t(head.labels.size());
  ref.problem_type = head.problem_type;
  ref.head_from_checkpoint =
      head.head == Head::sequence_classification ? pm.src.checkpoint_has_head : pm.src.has_head(head.head);
  ref.lora_targets = train::default_lora_targets(*pm.src.family);
  ref.modules_to_save = train::default_modules_to_save(*pm.src.family, head.head);
  train::TrainingStep step(*pm.model, step_settings(config, key, pm.src, head, pm.model->lora != nullptr));
  // The batch: the point's synthetic rows, or the first batch of the dataset's seeded order.
  if (!inputs) {
    SyntheticRows rows = synthetic_rows(*pm.model, pm.vocab, head, key.batch, key.seq_len, config.seed);
    ref.batch = std::move(rows.batch);
    ref.targets = std::move(rows.targets);
  } else {
    const train::TrainData& data = inputs->data_for(key.seq_len);
    const std::vector<int64_t> order = train::epoch_order(data.size(), config.seed, 0, true);
    std::vector<int64_t> first(size_t(key.batch));
    for (size_t i = 0; i < first.size(); ++i) first[i] = order[i % order.size()];
    train::make_batch(data, first, &ref.batch, &ref.targets);
  }
  const train::MicroBatchSource next = [&](int64_t, TokenBatch* b, train::Targets* t) {
    *b = ref.batch;
    *t = ref.targets;
  };
  for (int i = 0; i < steps; ++i) ref.losses.push_back(step.run(i, 1, next, config.train.lr).loss);
  const MachineCeilings ceilings = on_gpu ? as_machine_ceilings(measure_gpu_ceilings(device)) : machine_ceilings();
  PointResult::Train t;
  (void)profile_one_step(step, steps, next, config.train.lr, bf16 ? ceilings.gemm_bf16_flops : ceilings.gemm_f32_flops,
                         t);
  ref.model_flops_per_step = t.model_flops_per_step;
  ref.ceiling_gflops_per_s = (bf16 ? ceilings.gemm_bf16_flops : ceilings.gemm_f32_flops) / 1e9;
  ref.ceiling_under_load = ceilings.under_load;
  ref.ceiling_other_cores = ceilings.load_measured ? ceilings.other_cores : -1;
  ref.ceiling_load_average = ceilings.load_measured ? ceilings.load_average : -1;
  return ref;
}

}  // namespace tach::bench
