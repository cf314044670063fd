// tach profile: run a model under the profiler's schedule and write the trace, op tables,
// collapsed stacks and a verdict summary; print the top tables.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>

#include "commands.h"
#include "format.h"
#include "head_option.h"
#include "tach/analyze.h"
#include "tach/engine_profile.h"
#include "tach/error.h"
#include "tach/model.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/stats.h"
#include "tach/train.h"
#include "tf32_option.h"
#include "usage.h"

namespace fs = std::filesystem;

namespace tach::cli {

namespace {

struct ProfileFlags {
  std::string model = "preset:distilbert-base-uncased";
  int64_t batch = 8, seq_len = 128;
  std::string dtype = "f32";
  std::string device = "cpu";
  bool allow_tf32 = false;  // f32 GEMMs on TF32 tensor cores (CUDA inference)
  ProfileSchedule schedule{0, 1, 1, 3, 1};
  std::string output_dir;
  bool memory_logging = false;
  int memory_log_steps = 1;
  std::string group_by = "op", sort_by = "self";
  size_t top = 15;
  int overhead_steps = 5;
  bool gzip = false;
  int threads = 0;
  uint64_t seed = 0;
  std::string adapter;  // a peft LoRA adapter merged at load (forward profiles)
  std::string head = "auto";
  bool train = false;  // profile training steps (forward, loss, backward, AdamW) instead of forwards
  double lr = 5e-5;
  std::string exec = "eager";
  std::string method = "full";
  int64_t lora_r = 8;
  double lora_alpha = 8;
  bool gradient_checkpointing = false;
  std::string task = "sequence-classification";  // --train: the head that trains
  // --train --distill-from: a teacher's inference joins each step as its "teacher" phase.
  std::string distill_from, distill_dtype = "f32";
  double distill_temperature = 2.0, distill_alpha = 0.5;
  std::string engine = "tach";  // or torch, torch-compile: profiled in a worker under torch.profiler
  std::string python;           // --engine's worker interpreter ("" is python3)
};

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  check(static_cast<bool>(out), p.string() + ": cannot write");
  out << text;
  check(static_cast<bool>(out.flush()), p.string() + ": write failed");
}

TokenBatch random_batch(int64_t vocab_size, int32_t pad_token_id, int64_t B, int64_t T, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int32_t lo = vocab_size > 2000 ? 1000 : 0;
  std::uniform_int_distribution<int32_t> pick(lo, int32_t(std::min<int64_t>(vocab_size, 151643) - 1));
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(B), std::vector<int32_t>(static_cast<size_t>(T)));
  for (auto& r : rows)
    for (auto& id : r) id = pick(rng);
  return TokenBatch::from_rows(rows, pad_token_id);
}

// --task's head (tach train --task's names).
Head train_head(const std::string& task) {
  return task == "mlm"                    ? Head::masked_lm
         : task == "token-classification" ? Head::token_classification
         : task == "question-answering"   ? Head::question_answering
                                          : Head::sequence_classification;
}

// Targets of the task's shape for --train: a class per row ([B]); a label per token ([B*T]); the
// masked LM's every seventh token predicted (about the collator's 15%), -100 elsewhere ([B*T]); a
// start and an end per row ([B*2], pairs).
std::vector<int32_t> random_targets(Head head, const TokenBatch& batch, int64_t num_labels) {
  const int64_t B = batch.batch(), T = batch.seq_len(), tokens = B * T;
  const int32_t* ids = batch.input_ids.data<int32_t>();
  std::vector<int32_t> labels;
  if (head == Head::sequence_classification)
    for (int64_t i = 0; i < B; ++i) labels.push_back(int32_t(i % num_labels));
  else if (head == Head::token_classification)
    for (int64_t i = 0; i < tokens; ++i) labels.push_back(int32_t(i % num_labels));
  else if (head == Head::masked_lm)
    for (int64_t i = 0; i < tokens; ++i) labels.push_back(i % 7 == 0 ? ids[i] : -100);
  else
    for (int64_t i = 0; i < B; ++i) labels.insert(labels.end(), {int32_t(i % T), int32_t(std::min(T - 1, i % T + 2))});
  return labels;
}

std::string default_run_dir(const std::string& suffix) {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return "runs/" + std::string(buf) + suffix;
}

// tach profile's --sort-by as tach analyze's column: self is analyze's default (self device time
// where the trace has GPU events, else self CPU time).
std::string analyze_sort_column(const std::string& sort_by, bool gpu) {
  if (sort_by == "total") return gpu ? "device" : "cpu";
  if (sort_by == "memory") return "self_cpu_memory";
  if (sort_by == "flops") return "flops";
  if (sort_by == "gpu") return "self_device";
  return "";
}

// --engine torch|torch-compile: the same model, batch, length, dtype, device and ids in the
// engine's worker under torch.profiler, its traces read by tach analyze's library.
int run_engine_profile(const ProfileFlags& f) {
  check_profile_engine(f.engine, f.model, f.dtype);
  for (const auto& [given, option] : {std::pair{f.exec != "eager", "--exec"},
                                      {f.gradient_checkpointing, "--gradient-checkpointing"},
                                      {!f.distill_from.empty(), "--distill-from"}})
    usage_check(!given, std::string(option) + " with --engine " + f.engine +
                            ": it is tach's own training option; --engine profiles the engine's step as transformers' "
                            "Trainer runs it");
  usage_check(f.adapter.empty(), "--adapter with --engine " + f.engine +
                                     ": the adapter is merged by tach's loader only; merge it first (tach merge) and "
                                     "profile the merged model");
  usage_check(f.group_by != "module", "--group-by module with --engine " + f.engine +
                                          ": torch.profiler's op table groups by op or shape (tach analyze --group-by "
                                          "stack reads Python frames, which this profile does not record)");
  // tach reads the model too: its head picks the worker's task, and its vocabulary the ids, the
  // same ids (same seed) that tach profile gives tach's own engine.
  // --train: the head --task names (its labels: the checkpoint's, else 2), with its targets.
  LoadOptions lo;
  lo.seed = f.seed;
  lo.head = f.train ? std::optional<Head>(train_head(f.task)) : head_to_load(f.head, HeadUse::as_published);
  const std::unique_ptr<EncoderModel> model = load_model(f.model, lo);
  const ModelInfo& info = model->info();
  const TokenBatch batch = random_batch(info.vocab_size, info.pad_token_id, f.batch, f.seq_len, f.seed);
  const int64_t num_labels = info.labels.empty() ? 2 : int64_t(info.labels.size());
  check_engine_worker(f.engine, f.python);  // missing packages: refused before a directory is made
  const std::string dir = f.output_dir.empty() ? default_run_dir("-profile-" + f.engine) : f.output_dir;
  fs::create_directories(dir);
  announce_run_dir(dir);
  EngineProfileOptions eo;
  eo.engine = f.engine, eo.python = f.python, eo.model = f.model, eo.dtype = f.dtype;
  eo.device = parse_device(f.device), eo.threads = f.threads, eo.schedule = f.schedule, eo.gzip = f.gzip;
  eo.output_dir = dir;
  if (f.train) {
    eo.train = true, eo.method = f.method, eo.lr = f.lr, eo.seed = f.seed;
    eo.lora_r = f.lora_r, eo.lora_alpha = f.lora_alpha, eo.num_labels = num_labels;
    eo.labels = random_targets(*lo.head, batch, num_labels);
  }
  const std::string what = f.train ? "training steps" : "forwards";
  std::cerr << "tach: profiling " << what << " of " << f.model << " in engine " << f.engine << ", batch " << f.batch
            << " x " << f.seq_len << ", " << f.dtype << ", " << f.device << " (" << f.schedule.describe() << ")\n";
  const EngineProfile p = profile_engine(eo, info, batch);
  AnalyzeOptions ao;
  ao.group_by = f.group_by == "shape" ? "shape" : "name";
  ao.sort_by = analyze_sort_column(f.sort_by, eo.device.kind == DeviceKind::cuda);
  ao.top = f.top;
  const TraceAnalysis a = analyze_traces(p.traces, ao);
  std::vector<double> steps = p.step_s;
  std::ostringstream s;
  s << "tach profile --engine " << f.engine << ": " << what << " (" << p.task;
  if (f.train) s << ", " << f.method << ", lr " << f.lr;
  s << ") of " << f.model << ", batch " << f.batch << " x " << f.seq_len << ", " << f.dtype << ", " << f.device
    << ", profiled in " << f.engine << " under torch.profiler (" << p.versions << ")\n"
    << "one-time: load " << fixed(p.load_s, 2) << " s"
    << (p.setup_kind != "none" ? ", " + p.setup_kind + " " + fixed(p.setup_s, 2) + " s" : std::string())
    << ", first call " << fixed(p.first_call_s, 3) << " s (outside the profile)\n"
    << "schedule: " << f.schedule.describe() << "; " << p.steps << " calls, median "
    << fixed(steps.empty() ? 0.0 : summarize(steps).median * 1e3, 3)
    << " ms (the profiler recording in warmup and active calls); " << p.traces.size() << " trace"
    << (p.traces.size() == 1 ? "" : "s") << "\n\n"
    << a.text;
  nlohmann::json analysis = nlohmann::json::parse(a.json);
  analysis["engine"] = {
      {"name", p.engine},      {"task", p.task},       {"versions", p.versions},         {"load_s", p.load_s},
      {"setup", p.setup_kind}, {"setup_s", p.setup_s}, {"first_call_s", p.first_call_s}, {"step_s", p.step_s},
      {"log", p.log}};
  const fs::path out(dir);
  write_file(out / "analysis.json", analysis.dump(2) + "\n");
  write_file(out / "summary.txt", s.str());
  std::cout << s.str() << "\nwritten: " << dir << "/{" << fs::path(p.traces.front()).filename().string()
            << (p.traces.size() > 1 ? ", ..." : "")
            << " (open in ui.perfetto.dev), analysis.json, summary.txt, engines/" << f.engine << ".log}; tach report "
            << dir << " draws it\n";
  return 0;
}

int run_profile(ProfileFlags f) {
  if (f.threads > 0) set_threads(f.threads);
  // auto: the first GPU when one is usable, else the CPU (said on stderr); cuda without one is
  // an error naming why.
  std::string device_note;
  f.device = training_device(f.device, &device_note).str();
  if (!device_note.empty()) std::cerr << "tach: " << device_note << "\n";
  check_allow_tf32(f.allow_tf32, {f.device}, {f.dtype}, f.train);
  usage_check(!f.allow_tf32 || f.engine == "tach",
              "--allow-tf32 sets tach's own GEMMs; --engine " + f.engine + " runs its own (drop --allow-tf32)");
  if (f.engine != "tach") return run_engine_profile(f);
  check(f.batch > 0 && f.seq_len > 0, "--batch-size and --seq-len must be positive");
  parse_compute_dtype(f.dtype);  // names the dtypes there are
  check((f.dtype != "int8" && f.dtype != "nf4") || !f.train,
        "--dtype " + f.dtype + " quantizes an inference forward; training runs in f32 or bf16 (QLoRA: --method qlora)");
  // f16 GEMMs exist on CUDA only; the CPU reads f16 checkpoints but computes in f32 or bf16.
  usage_check(f.dtype != "f16" || (!f.train && parse_device(f.device).kind == DeviceKind::cuda),
              "--dtype f16 computes on a GPU only (--device cuda, inference): the CPU computes in f32 or bf16");
  // One step: a forward (inference), or with --train a whole training step.
  std::unique_ptr<EncoderModel> model;
  std::unique_ptr<TrainStepper> stepper;
  TokenBatch batch;
  std::vector<int32_t> labels;
  std::function<void()> run_step;
  if (f.train) {
    TrainStepper::Options so;
    so.model = f.model;
    so.seed = f.seed;
    so.lr = f.lr;
    check(f.exec == "eager" || f.exec == "fused", "--exec must be eager or fused, got " + f.exec);
    so.fused = f.exec == "fused";
    check(f.method == "full" || f.method == "lora" || f.method == "qlora",
          "--method must be full, lora or qlora, got " + f.method);
    so.lora = f.method == "lora";
    so.qlora = f.method == "qlora";
    so.lora_r = f.lora_r;
    so.lora_alpha = f.lora_alpha;
    so.gradient_checkpointing = f.gradient_checkpointing;
    so.distill_from = f.distill_from;
    so.distill_temperature = f.distill_temperature;
    so.distill_alpha = f.distill_alpha;
    so.distill_dtype = f.distill_dtype;
    so.bf16 = f.dtype == "bf16";
    so.device = parse_device(f.device);
    so.head = train_head(f.task);
    stepper = TrainStepper::create(so);
    for (const auto& n : stepper->notes()) std::cerr << "tach: note: " << n << "\n";
    batch = random_batch(stepper->vocab_size(), stepper->pad_token_id(), f.batch, f.seq_len, f.seed);
    labels = random_targets(so.head, batch, stepper->num_labels());
    run_step = [&] { (void)stepper->step(batch, labels); };
  } else {
    LoadOptions lo;
    lo.seed = f.seed;
    lo.adapter = f.adapter;
    lo.compute = parse_compute_dtype(f.dtype);
    lo.device = parse_device(f.device);
    lo.allow_tf32 = f.allow_tf32;
    lo.head = head_to_load(f.head, HeadUse::as_published);
    model = load_model(f.model, lo);
    check(model->info().head != Head::none || model->info().embedding || model->info().causal_lm,
          f.model +
              " has no head and is neither an embedding model nor a causal LM: nothing to profile a forward of "
              "(--head builds a head)");
    batch = random_batch(model->info().vocab_size, model->info().pad_token_id, f.batch, f.seq_len, f.seed);
    run_step = [&] {
      ProfileScope forward("forward");
      (void)model->measured_forward(batch);  // the head's logits, or the pooled embeddings
    };
  }
  const std::string what = f.train ? "training steps (forward with the loss, backward, AdamW; " + f.task + ", " +
                                         f.method + ", exec " + f.exec + ")"
                                   : "forwards";

  const std::string dir = f.output_dir.empty() ? default_run_dir("-profile/traces") : f.output_dir;
  fs::create_directories(dir);
  announce_run_dir(dir);

  const Device device = f.train ? parse_device(f.device) : model->info().device;
  ProfilerOptions po;
  po.schedule = f.schedule;
  po.memory_device = device;
  po.memory_logging = true;  // the step samples are cheap; --enable-memory-logging adds them to the outputs
  po.memory_log_steps = f.memory_log_steps;
  const int64_t cycles = f.schedule.repeat > 0 ? f.schedule.repeat : 1;
  const int64_t steps = f.schedule.skip_first + cycles * (f.schedule.wait + f.schedule.warmup + f.schedule.active);
  std::cerr << "tach: profiling " << what << " of " << f.model << ", batch " << f.batch << " x " << f.seq_len << ", "
            << f.dtype << ", " << steps << " steps (" << f.schedule.describe() << ")\n";
  Profiler profiler(po);
  profiler.start();
  for (int64_t s = 0; s < steps; ++s) {
    run_step();
    profiler.step();
  }
  profiler.stop();
  const ProfileData data = profiler.data();

  // The profiler's own cost: steps with it recording against steps without, alternating.
  std::vector<double> on, off;
  for (int i = 0; i < f.overhead_steps; ++i) {
    for (bool recording : {false, true}) {
      ProfilerOptions o;
      o.schedule = {0, 0, 0, 1, 1};
      o.memory_logging = false;
      Profiler p(o);
      if (recording) p.start();
      const auto t0 = std::chrono::steady_clock::now();
      run_step();
      (recording ? on : off).push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      p.stop();
    }
  }
  const double on_med = summarize(on).median, off_med = summarize(off).median;
  int64_t events_per_step = 0;
  for (const auto& e : data.events) events_per_step += e.step == data.events.front().step;

  // On a GPU the ops are judged by their kernels' GPU time against the GPU's ceilings.
  // With --allow-tf32 the f32 GEMMs are judged against the TF32 ceiling, the one they run under.
  MachineCeilings ceilings = device.kind == DeviceKind::cuda
                                 ? as_machine_ceilings(measure_gpu_ceilings(device), f.allow_tf32)
                                 : machine_ceilings();
  if (!data.gpu_activity_note.empty()) std::cerr << "tach: note: " << data.gpu_activity_note << "\n";
  // An op faster than its ceiling means the ceiling is wrong (cached from a busy moment, say):
  // measure it again once, and if it still is, say so loudly above every verdict.
  std::vector<std::string> violations = ceiling_violations(data, ceilings);
  std::string ceiling_note;
  if (!violations.empty() && ceilings.from_cache) {
    ceiling_note = "the cached ceilings (" + ceilings.measured_at + ") were below what " +
                   std::to_string(violations.size()) + " ops achieved; measured them again\n";
    ceilings = machine_ceilings(true);
    violations = ceiling_violations(data, ceilings);
  }
  const double ns_per_event = profiler_ns_per_event();
  const fs::path out(dir);
  const std::string trace_name = f.gzip ? "trace.json.gz" : "trace.json";
  write_chrome_trace(data, (out / trace_name).string());
  for (const char* g : {"op", "module", "shape"}) {
    const auto rows = op_table(data, g, f.sort_by, ceilings);
    write_file(out / ("ops_by_" + std::string(g) + ".csv"), op_table_csv(rows));
    write_file(out / ("ops_by_" + std::string(g) + ".json"), op_table_json(rows));
  }
  write_file(out / "stacks.txt", collapsed_stacks(data));

  const StepAccounting acc = step_accounting(data);
  const LeakVerdict leak = detect_leak(data);
  std::ostringstream s;
  s << "tach profile: " << what << " of " << f.model << ", batch " << f.batch << " x " << f.seq_len << ", " << f.dtype
    << "\n"
    << "schedule: " << f.schedule.describe() << "; " << data.events.size() << " events kept, " << data.dropped_events
    << " dropped" << (data.dropped_events ? " (WARNING: raise the cap or shorten the active window)" : "") << "\n"
    << "machine ceilings: GEMM " << (f.allow_tf32 ? "tf32 " : "f32 ") << fixed(ceilings.gemm_f32_flops * 1e-9, 1)
    << " GFLOP/s, bf16 " << fixed(ceilings.gemm_bf16_flops * 1e-9, 1) << " GFLOP/s, int8 "
    << fixed(ceilings.gemm_int8_ops * 1e-9, 1) << " GOP/s, memory " << fixed(ceilings.memory_bytes_per_s * 1e-9, 1)
    << " GB/s (" << ceilings.method << "; " << describe_ceilings_provenance(ceilings) << ")\n"
    << ceiling_note;
  if (!violations.empty()) {
    s << "WARNING: " << violations.size() << " ops ran faster than the machine's ceilings allow (by more than "
      << fixed((kCeilingTolerance - 1) * 100, 0) << "%), so the roofline verdicts below are not to be trusted; the "
      << "ceilings were measured under other load or settings. Measure them on a quiet machine: tach info --ceilings "
      << "--remeasure\n";
    for (size_t i = 0; i < violations.size() && i < 5; ++i) s << "  " << violations[i] << "\n";
  }
  s << "\n"
    << "Step accounting (median over active steps)\n"
    << "  step wall time            " << fixed(acc.step_ns * 1e-6, 3) << " ms\n"
    << "  ops (kernels with checks) " << fixed(acc.ops_ns * 1e-6, 3) << " ms ("
    << fixed(acc.step_ns > 0 ? 100 * acc.ops_ns / acc.step_ns : 0, 2) << "%)\n"
    << "  in modules, between ops   " << fixed(acc.inside_modules_ns * 1e-6, 3)
    << " ms: buffer allocation, pooling, head copies, span bookkeeping\n"
    << "  outside the model         " << fixed(acc.outside_ns * 1e-6, 3)
    << " ms: the caller's loop and the profiler's step boundary\n\n"
    << "Profiler overhead: " << fixed(ns_per_event, 0) << " ns per recorded span (measured in a tight loop) x "
    << events_per_step << " spans per step = " << fixed(ns_per_event * double(events_per_step) * 1e-6, 3) << " ms, "
    << fixed(acc.step_ns > 0 ? 100 * ns_per_event * double(events_per_step) / acc.step_ns : 0, 3)
    << "% of the step. Cross-check, steps timed with the profiler off and on, alternating (" << f.overhead_steps
    << " pairs, medians): " << fixed(off_med * 1e3, 2) << " ms off, " << fixed(on_med * 1e3, 2) << " ms on ("
    << fixed(off_med > 0 ? 100 * (on_med - off_med) / off_med : 0, 1)
    << "%; this machine's step-to-step noise is larger than the overhead)\n\n"
    << "Top bottlenecks\n";
  int k = 1;
  for (const auto& b : bottlenecks(data, ceilings, 3)) s << "  " << k++ << ". " << b << "\n";
  s << "\nMemory: " << leak.explanation << "\n";
  for (const auto& c : leak.growing_categories) s << "  growing: " << c << "\n";
  for (const auto& c : leak.growing_scopes) s << "  scope keeping memory: " << c << "\n";
  if (f.memory_logging) {
    s << "\nMemory timeline (allocator bytes at each step's end; RSS)"
      << (f.train ? "; training keeps its activations in buffers planned for the batch shape and reused by every "
                    "step (the backward overwrites them with gradients rather than freeing them), so the "
                    "activations line is flat by design"
                  : "")
      << "\n";
    for (const auto& st : data.steps)
      if (st.allocator_total_bytes)
        s << "  step " << st.step << (st.active ? " (active)" : "") << ": allocator "
          << human_bytes(double(st.allocator_total_bytes)) << ", activations "
          << human_bytes(double(st.allocator_bytes[size_t(MemoryCategory::activations)])) << ", RSS "
          << human_bytes(double(st.rss_bytes)) << "\n";
  }
  write_file(out / "summary.txt", s.str());
  write_file(out / "profile.json", profile_summary_json(data, ceilings));

  std::cout << s.str() << "\nOps by " << f.group_by << ", sorted by " << f.sort_by << " time (top " << f.top << ")\n"
            << op_table_text(op_table(data, f.group_by, f.sort_by, ceilings), f.top) << "\nModules (top " << f.top
            << ")\n"
            << op_table_text(op_table(data, "module", "total", ceilings), f.top) << "\nwritten: " << dir << "/{"
            << trace_name << " (open in ui.perfetto.dev), ops_by_{op,module,shape}.{csv,json}, stacks.txt, "
            << "summary.txt}\n";
  return 0;
}

}  // namespace

Command add_profile_command(CLI::App& app) {
  auto f = std::make_shared<ProfileFlags>();
  CLI::App* sub =
      app.add_subcommand("profile",
                         "Op-level profile of a forward (or with --train a training step): Perfetto/Chrome trace, op "
                         "tables by op/module/shape, collapsed "
                         "stacks, roofline verdicts, step accounting, the profiler's overhead and a leak verdict");
  sub->add_option("-m,--model", f->model, "Model: preset:NAME, a directory, or a hub id in the HF cache")
      ->capture_default_str();
  sub->add_option(kBatchOption, f->batch, "Rows per forward")
      ->capture_default_str()
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option("-s,--seq-len", f->seq_len, "Tokens per row")
      ->capture_default_str()
      ->check(positive_count("sequence length", "sequence lengths"));
  sub->add_option("--dtype", f->dtype,
                  "Compute dtype: f32, bf16, int8 or nf4 (inference: the linears quantized); f16 too on cuda")
      ->capture_default_str()
      ->check(compute_dtype_name("--dtype"));
  sub->add_option("--device", f->device,
                  "cpu, cuda, cuda:N, or auto (the first GPU when one is usable, else the CPU); forwards and --train "
                  "steps alike. On a GPU every kernel comes from CUPTI with its GPU time, under the op that launched "
                  "it")
      ->capture_default_str()
      ->check(device_name(true));
  add_allow_tf32_option(sub, f->allow_tf32);
  sub->add_option("--profiler-skip-first", f->schedule.skip_first, "Steps before the first cycle")
      ->capture_default_str()
      ->check(non_negative_count("--profiler-skip-first"));
  sub->add_option("--profiler-wait", f->schedule.wait, "Steps per cycle with the profiler off")
      ->capture_default_str()
      ->check(non_negative_count("--profiler-wait"));
  sub->add_option("--profiler-warmup", f->schedule.warmup, "Steps per cycle recorded and discarded")
      ->capture_default_str()
      ->check(non_negative_count("--profiler-warmup"));
  sub->add_option("--profiler-active", f->schedule.active, "Steps per cycle recorded and kept")
      ->capture_default_str()
      ->check(positive_count("--profiler-active", "--profiler-active values"));
  sub->add_option("--profiler-repeat", f->schedule.repeat, "Cycles (wait, warmup, active)")
      ->capture_default_str()
      ->check(non_negative_count("--profiler-repeat"));
  sub->add_option("--profiler-output-dir", f->output_dir,
                  "Where the trace and tables go (default runs/<time>-profile/traces; with --engine, "
                  "runs/<time>-profile-<engine>)");
  sub->add_flag("--enable-memory-logging", f->memory_logging, "Write the memory timeline to the summary");
  sub->add_option("--memory-log-steps", f->memory_log_steps, "Sample memory every N steps")
      ->capture_default_str()
      ->check(positive_count("--memory-log-steps", "--memory-log-steps values"));
  sub->add_option("--group-by", f->group_by, "Printed table: op, module or shape")
      ->capture_default_str()
      ->check(one_of("--group-by", {"op", "module", "shape"}));
  sub->add_option("--sort-by", f->sort_by,
                  "Sort tables by self, total, memory, flops or gpu (the kernels' GPU time under each row)")
      ->capture_default_str()
      ->check(one_of("--sort-by", {"self", "total", "memory", "flops", "gpu"}));
  sub->add_option("--top", f->top, "Rows printed per table")
      ->capture_default_str()
      ->check(positive_count("--top", "--top values"));
  sub->add_option("--overhead-steps", f->overhead_steps, "Alternating on/off steps that measure the profiler's cost")
      ->capture_default_str()
      ->check(positive_count("--overhead-steps", "--overhead-steps values"));
  sub->add_flag("--gzip", f->gzip, "Write trace.json.gz (zlib) instead of trace.json");
  sub->add_option("-t,--threads", f->threads, "Threads (default: the cores other processes leave free at start)")
      ->check(thread_count());
  sub->add_option("--adapter", f->adapter,
                  "A LoRA adapter directory (peft's format) merged into the weights at load, for a forward profile");
  sub->add_option("--seed", f->seed, "Seed for preset weights and ids")->capture_default_str();
  add_head_option(sub, f->head, HeadUse::as_published);
  sub->add_flag("--train", f->train,
                "Profile training steps (forward with the loss, backward, clipping, AdamW) on random ids and labels; "
                "backward ops appear under module paths starting with backward.");
  sub->add_option("--lr", f->lr, "--train: the learning rate of the steps")->capture_default_str();
  sub->add_option("--method", f->method,
                  "--train: full (every parameter), lora (adapters on every linear of the layers, as tach train "
                  "--method lora with its defaults) or qlora (the same, the frozen layer weights in NF4)")
      ->capture_default_str()
      ->check(one_of("--method", {"full", "lora", "qlora"}));
  sub->add_option("--lora-r", f->lora_r, "--train --method lora: the rank")
      ->capture_default_str()
      ->check(positive_count("--lora-r", "LoRA ranks"));
  sub->add_option("--lora-alpha", f->lora_alpha, "--train --method lora: alpha")->capture_default_str();
  sub->add_flag("--gradient-checkpointing", f->gradient_checkpointing,
                "--train: keep each layer's input only and recompute the layer in the backward");
  sub->add_option("--exec", f->exec, "--train: eager (one op at a time, every intermediate kept) or fused")
      ->capture_default_str()
      ->check(one_of("--exec", {"eager", "fused"}));
  sub->add_option("--task", f->task,
                  "--train: the head that trains, as tach train --task: sequence-classification, mlm, "
                  "token-classification or question-answering (random targets of its shape)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sequence-classification", "mlm", "token-classification", "question-answering"}));
  sub->add_option("--distill-from", f->distill_from,
                  "--train: distil from this trained teacher, as tach train --distill-from (its inference is the "
                  "step's \"teacher\" scope)");
  sub->add_option("--distill-temperature", f->distill_temperature, "--train --distill-from: the temperature T")
      ->capture_default_str();
  sub->add_option("--distill-alpha", f->distill_alpha, "--train --distill-from: the teacher's weight")
      ->capture_default_str();
  sub->add_option("--distill-dtype", f->distill_dtype, "--train --distill-from: the teacher's inference dtype")
      ->capture_default_str();
  sub->add_option("--engine", f->engine,
                  "The engine to profile: tach (its own profiler, as above), or torch or torch-compile: the same "
                  "model, batch, length, dtype, device and token ids in a Python worker (as tach bench --engine) under "
                  "torch.profiler (shapes recorded, no stacks; CPU, and CUDA on a GPU), its traces written to the "
                  "output directory and read as tach analyze reads them (--group-by op or shape, --sort-by, --top). "
                  "With --train: the engine's training steps (--task, --method, --lr, --lora-r, --lora-alpha; "
                  "transformers' Trainer step). onnxruntime is refused: its profiler's JSON is not torch.profiler's")
      ->capture_default_str();
  sub->add_option("--python", f->python,
                  "--engine: the worker's Python, one with torch and transformers (a virtualenv's bin/python; "
                  "default python3)");
  return {sub, [f] { return run_profile(*f); }};
}

}  // namespace tach::cli
