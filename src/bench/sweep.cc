// run_bench / resume_bench / run_eval: the grid, model loading per device and dtype, failures
// recorded as results, and the accuracy pass.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "bench/bench_internal.h"
#include "bench/engine_point.h"
#include "bench/task_passes.h"
#include "cpu/gemm.h"
#include "engines/engine_names.h"
#include "dist/communicator.h"
#include "model/checkpoint.h"
#include "model/family.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "tach/memory.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/stats.h"
#include "tach/plain_number.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

void validate_train(const BenchConfig& c) {
  const TrainSweep& t = c.train;
  check(!t.methods.empty() && !t.execs.empty() && !t.gradient_checkpointing.empty(),
        "every training axis needs at least one value (--method, --exec, --gradient-checkpointing)");
  for (const auto& m : t.methods)
    check(m == "full" || m == "lora" || m == "qlora", "method '" + m + "' is not one of full, lora, qlora");
  for (const auto& e : t.execs) check(e == "eager" || e == "fused", "exec '" + e + "' is not one of eager, fused");
  check(t.task == "sequence-classification" || t.task == "mlm" || t.task == "token-classification" ||
            t.task == "question-answering",
        "task '" + t.task + "' is not one of sequence-classification, mlm, token-classification, question-answering");
  check(t.task == "sequence-classification" || c.dataset.path.empty(),
        "--task " + t.task +
            " times steps on synthetic rows (random ids and targets of the task's shape); a dataset feeds a sequence "
            "classifier's sweep only (tach train --task " +
            t.task + " trains on data)");
  check(std::isfinite(t.lr) && t.lr > 0, "--lr must be a positive number");
  check(std::isfinite(t.max_grad_norm) && t.max_grad_norm >= 0, "--max-grad-norm must be 0 (no clipping) or more");
  check(t.weight_decay >= 0 && t.adam_eps > 0 && t.adam_beta1 >= 0 && t.adam_beta1 < 1 && t.adam_beta2 >= 0 &&
            t.adam_beta2 < 1,
        "AdamW: weight decay >= 0, epsilon > 0, betas in [0, 1)");
  check(t.lora_r > 0 && t.lora_alpha > 0 && t.lora_dropout >= 0 && t.lora_dropout < 1,
        "LoRA: rank and alpha positive, dropout in [0, 1)");
  check(!c.accuracy,
        "--accuracy evaluates a classifier's forwards; a training sweep measures steps: run tach eval "
        "on the trained model instead");
  check(!c.bucketing,
        "--bucketing is for inference batches; a training sweep's dataset batches pad to their longest "
        "row, as tach train's do");
}

// here: the devices and the bf16 GEMM are checked on this machine. A sweep submitted to SLURM
// is checked so on its nodes, by each task.
void validate(const BenchConfig& c, bool here = true) {
  usage_check(!c.model.empty(), "no model given");
  usage_check(
      !c.batch_sizes.empty() && !c.seq_lens.empty() && !c.dtypes.empty() && !c.devices.empty() && !c.threads.empty(),
      "every sweep axis needs at least one value");
  for (int64_t b : c.batch_sizes)
    usage_check(b > 0, "batch size " + std::to_string(b) + ": batch sizes must be positive integers");
  for (int64_t s : c.seq_lens)
    usage_check(s > 0, "sequence length " + std::to_string(s) + ": sequence lengths must be positive integers");
  for (int t : c.threads)
    usage_check(t >= 0, "threads " + std::to_string(t) +
                            ": must be 0 (the default: the cores other processes leave free when tach "
                            "starts, or OMP_NUM_THREADS) or more");
  // A value given twice would measure the same point (or accuracy pass) twice, its second run
  // warmer than its first: refused, so that each value is measured once, in its own pass.
  for (const std::vector<std::string>* axis : {&c.dtypes, &c.devices})
    for (size_t i = 0; i < axis->size(); ++i)
      usage_check(std::find(axis->begin() + long(i) + 1, axis->end(), (*axis)[i]) == axis->end(),
                  "'" + (*axis)[i] + "' is given twice in --" + (axis == &c.dtypes ? "dtype" : "device") +
                      ": give each value once");
  for (const auto& d : c.dtypes) {
    usage_check(d == "f32" || d == "bf16" || d == "f16" || d == "int8" || d == "nf4",
                "dtype '" + d + "' is not one of f32, bf16, f16, int8, nf4");
    const bool quantized = d == "int8" || d == "nf4";
    usage_check(
        !quantized || !c.train.enabled,
        "dtype " + d + " quantizes inference forwards; training sweeps run in f32 or bf16 (QLoRA: --method qlora)");
    // f16 checkpoints load anywhere (converted), but only CUDA computes in f16: refuse a CPU point
    // here, once, rather than failing it in the sweep.
    usage_check(d != "f16" || (!c.train.enabled && std::all_of(c.devices.begin(), c.devices.end(),
                                                               [](const std::string& dev) {
                                                                 return parse_device(dev).kind == DeviceKind::cuda;
                                                               })),
                "dtype f16 computes on a GPU only (--device cuda, inference): the CPU computes in f32 or bf16 (f16 "
                "checkpoints are read and converted); sweep --dtype f32,bf16");
    // Training in bf16 runs everywhere (emulated where the CPU has no bf16 GEMM, and said so).
    // bf16 inference runs everywhere too: without a bf16 GEMM, bf16 weights widened to f32
    // (cpu/bf16_weight_linear.h).
  }
  for (const auto& d : c.devices) {
    const Device dev = parse_device(d);  // a clear error for "tpu", "cuda:x"
    check(dev.kind != DeviceKind::cuda || !here || cuda_available(),
          "device " + d + ": no CUDA device here (" + cuda_unavailable_reason() + "); sweep --device cpu");
  }
  usage_check(c.warmup_runs >= 0, "warm-up runs must be 0 or more");
  usage_check(c.decode_tokens >= 0, "--decode-tokens must be 0 (prefill only) or more");
  usage_check(std::isfinite(c.gpu_energy_window_s) && c.gpu_energy_window_s >= 0,
              "--energy-window must be 0 (no GPU energy) or a number of seconds");
  usage_check(c.stop.runs >= 0 && c.stop.min_runs >= 1 && c.stop.max_runs >= c.stop.min_runs,
              "stopping rule: --runs must be 0 or more, --min-runs at least 1 and --max-runs at least --min-runs "
              "(got --runs " +
                  std::to_string(c.stop.runs) + ", --min-runs " + std::to_string(c.stop.min_runs) + ", --max-runs " +
                  std::to_string(c.stop.max_runs) + ")");
  usage_check(std::isfinite(c.stop.time_budget_s) && c.stop.time_budget_s >= 0,
              "--time-budget must be 0 (none) or a number of seconds, got " + plain_number(c.stop.time_budget_s));
  usage_check(c.stop.runs > 0 || c.stop.target_cv > 0 || c.stop.time_budget_s > 0 || c.stop.max_runs < 1000000,
              "stopping rule: give a count, a time budget or a precision target");
  usage_check(c.input == "synthetic" || c.input == "dataset",
              "input '" + c.input + "' is not one of synthetic, dataset");
  check(c.input != "dataset" || !c.dataset.path.empty(), "--input dataset needs --dataset FILE");
  check(!c.accuracy || !c.dataset.path.empty(), "accuracy needs a labelled dataset: pass --dataset FILE");
  engines::check_engines(c.engines, c.train.enabled);
  usage_check(c.engines == std::vector<std::string>{"tach"} || c.input == "synthetic" || !c.bucketing,
              "--bucketing varies each batch's length; another engine times one batch per point: drop --bucketing");
  if (c.train.enabled) validate_train(c);
}

// What cannot run anywhere in the grid is an error before a run directory is made, not a grid of
// failed points: a model that is not found (a missing directory, a hub id neither cached nor
// downloadable), a config.json that does not parse or names a family tach does not build, and
// sequence lengths that are all past the model's positions. Reads config.json only, not weights.
void check_model_runs(const BenchConfig& c) {
  const model::ArchitectureSummary a = model::summarize_architecture(model::resolve_model(c.model));
  if (a.P <= 0 || c.seq_lens.empty()) return;
  const int64_t shortest = *std::min_element(c.seq_lens.begin(), c.seq_lens.end());
  std::string lengths;
  for (int64_t s : c.seq_lens) lengths += (lengths.empty() ? "" : ",") + std::to_string(s);
  usage_check(shortest <= a.P, "every sequence length (-s " + lengths + ") is past " + c.model + "'s " +
                                   std::to_string(a.P) + " positions (max_position_embeddings): sweep -s " +
                                   std::to_string(std::min<int64_t>(a.P, 128)) + " or up to " + std::to_string(a.P));
  // A decoder's decoding (--decode-tokens) starts from a prompt of each length: when no length
  // leaves room for the new tokens within the positions, no point could decode, so the sweep is
  // refused, naming the limit, before anything runs (a point past it among others that fit says
  // "decoding: not run" in the findings).
  if (!a.decoder || c.decode_tokens <= 0 || c.train.enabled || shortest + c.decode_tokens <= a.P) return;
  const std::string advice = shortest < a.P ? "give --decode-tokens at most " + std::to_string(a.P - shortest) : "";
  const std::string shorter = c.decode_tokens < a.P ? "-s at most " + std::to_string(a.P - c.decode_tokens) : "";
  usage_check(false,
              (c.seq_lens.size() > 1 ? "every sequence length (-s " + lengths + ") leaves no room: the shortest, "
                                     : std::string("-s ")) +
                  std::to_string(shortest) + " prompt tokens + --decode-tokens " + std::to_string(c.decode_tokens) +
                  " new ones (" + std::to_string(shortest + c.decode_tokens) + " per row) is past " + c.model + "'s " +
                  std::to_string(a.P) + " positions (max_position_embeddings): " + advice +
                  (!advice.empty() && !shorter.empty() ? ", or " : "") + shorter);
}

}  // namespace

namespace bench {

std::string resolve_auto_device(BenchConfig& c) {
  if (std::find(c.devices.begin(), c.devices.end(), "auto") == c.devices.end()) return "";
  std::string pick = "cpu", why;
  if (cuda_available()) {
    const auto devices = cuda_devices();
    pick = "cuda:0";
    why = devices.empty() ? "a CUDA device is usable" : devices.front().name + " is usable";
  } else {
    why = "no usable GPU: " + cuda_unavailable_reason();
  }
  std::vector<std::string> resolved;
  for (const auto& d : c.devices) {
    const std::string r = d == "auto" ? pick : d;
    if (std::find(resolved.begin(), resolved.end(), r) == resolved.end()) resolved.push_back(r);
  }
  c.devices = resolved;
  return "device auto: " + pick + " (" + why + ")";
}

std::string default_run_id(const std::string& model) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  std::string name = model.substr(model.find_last_of("/:") == std::string::npos ? 0 : model.find_last_of("/:") + 1);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.' && ch != '_') ch = '-';
  return std::string(buf) + "-" + name;
}

std::string unique_run_id(const std::string& runs_dir, const std::string& base) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  check(!ec, runs_dir + ": cannot create: " + ec.message());
  for (int n = 1; n < 1000; ++n) {
    std::string id = n == 1 ? base : base + "-" + std::to_string(n);
    if (fs::create_directory(fs::path(runs_dir) / id, ec)) return id;
  }
  throw Error(runs_dir + ": cannot find a free run directory name for " + base);
}

}  // namespace bench

using bench::default_run_id;
using bench::resolve_auto_device;
using bench::unique_run_id;

namespace {

DType compute_dtype(const std::string& d) { return parse_compute_dtype(d); }

// Training points: the batch innermost, so a series (every axis but the batch) is contiguous.
std::vector<PointKey> train_grid(const BenchConfig& c) {
  std::vector<PointKey> keys;
  for (const auto& device : c.devices)
    for (const auto& dtype : c.dtypes)
      for (int t : c.threads)
        for (int64_t s : c.seq_lens)
          for (const auto& method : c.train.methods)
            for (const auto& exec : c.train.execs)
              for (bool gc : c.train.gradient_checkpointing)
                for (const auto& engine : c.engines) {
                  // --exec is tach's (its eager or fused kernels): another engine's points are
                  // made once, under the first --exec value.
                  if (engine != "tach" && exec != c.train.execs.front()) continue;
                  for (int64_t b : c.batch_sizes) {
                    PointKey k;
                    k.kind = "train", k.engine = engine, k.device = parse_device(device).str(), k.dtype = dtype;
                    k.threads = t, k.batch = b, k.seq_len = s, k.method = method, k.exec = exec;
                    k.gradient_checkpointing = gc;
                    keys.push_back(k);
                  }
                }
  return keys;
}

}  // namespace

namespace bench {

void write_point_traces(const ProfileData& data, const PointKey& key, const std::string& run_dir) {
  std::string id = key.id();
  for (char& c : id)
    if (c == '/') c = '_';
  const fs::path dir = fs::path(run_dir) / "traces" / id;
  fs::create_directories(dir);
  const MachineCeilings ceilings = machine_ceilings();
  const auto put = [&](const char* name, const std::string& text) {
    std::ofstream out(dir / name, std::ios::binary);
    out << text;
  };
  put("trace.json", chrome_trace_json(data));
  put("ops_by_op.csv", op_table_csv(op_table(data, "op", "self", ceilings)));
  put("ops_by_module.csv", op_table_csv(op_table(data, "module", "total", ceilings)));
  put("ops_by_shape.csv", op_table_csv(op_table(data, "shape", "self", ceilings)));
  put("stacks.txt", collapsed_stacks(data));
  put("profile.json", profile_summary_json(data, ceilings));
}

EstimateInput estimate_input(const BenchConfig& config, const PointKey& key) {
  EstimateInput ei;
  ei.model = config.model;
  ei.dtype = key.dtype;
  ei.batch = key.batch;
  ei.seq_len = key.seq_len;
  ei.device = key.device;
  return ei;
}

std::string fit_refusal(const EstimateInput& in, MemoryEstimate* estimate) {
  EstimateInput ei = in;
  ei.margin = 0.05;
  try {
    const MemoryEstimate e = estimate_memory(ei);
    if (estimate) *estimate = e;
    if (e.fits) return "";
    return "does not fit: the estimate needs " + std::to_string(e.total_bytes >> 20) + " MiB, " +
           std::to_string(e.available_bytes >> 20) + " MiB are available (" + e.available_source +
           "); the largest batch that fits is " + std::to_string(e.largest_batch_that_fits);
  } catch (const Error&) {  // no estimate for this model: run the point and see
    return "";
  }
}

int pinned_default_threads(const RunStore& store, const BenchObserver& observer, SweepOutcome& out) {
  int recorded = 0;
  for (const auto& p : store.finished())
    if (p.key.threads == 0 && p.threads_used > 0) {
      recorded = p.threads_used;
      break;
    }
  if (recorded == 0) return 0;
  set_threads(0);
  if (const int here = threads(); here != recorded) {
    const std::string note = "this run's default points ran with " + std::to_string(recorded) +
                             " threads; its remaining ones do too, where the default here is now " +
                             std::to_string(here) + " (" + default_threads_reason() +
                             "), so that the series stays comparable";
    out.notes.push_back(note);
    if (observer.on_note) observer.on_note(note);
  }
  return recorded;
}

PointResult failed_point(const PointKey& key, const std::string& reason, const std::string& input) {
  PointResult p;
  p.key = key;
  p.status = "failed";
  p.reason = reason;
  p.input = input;
  p.finished_at = utc_now_iso();
  return p;
}

std::vector<PointKey> sweep_grid(const BenchConfig& c) {
  if (c.train.enabled) return train_grid(c);
  std::vector<PointKey> keys;
  for (const auto& device : c.devices)
    for (const auto& dtype : c.dtypes)
      for (int t : c.threads)
        for (int64_t s : c.seq_lens)
          for (const auto& engine : c.engines)
            for (int64_t b : c.batch_sizes) {
              PointKey k;
              k.engine = engine, k.device = parse_device(device).str(), k.dtype = dtype, k.threads = t;
              k.batch = b, k.seq_len = s;
              keys.push_back(k);
            }
  return keys;
}

}  // namespace bench

namespace {

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What an accuracy pass's results depend on. accuracy.json keeps it, so that a resumed run reuses
// the file only when it was measured so (anything else is measured again).
nlohmann::json accuracy_settings(const BenchConfig& c) {
  const nlohmann::json all = nlohmann::json::parse(bench_config_to_json(c));
  nlohmann::json settings = nlohmann::json::object();
  for (const char* key : {"model", "tokenizer", "adapter", "devices", "dtypes", "seed", "dataset", "bucketing",
                          "sample_sizes", "limit", "eval_batch_size", "eval_max_length"})
    settings[key] = all.at(key);
  // A head other than the checkpoint's changes every prediction; "auto" is left out, so that files
  // written before --head still match.
  if (c.head != "auto") settings["head"] = c.head;
  return settings;
}

// accuracy.json's results when they were measured with these settings; nullopt (with the reason in
// *why) when the file was written for other settings or before files said which.
std::optional<std::vector<AccuracyResult>> matching_accuracy(const std::string& text, const std::string& where,
                                                             const BenchConfig& config, std::string* dataset,
                                                             std::string* why) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) { throw Error(where + ": " + e.what()); }
  const nlohmann::json wanted = accuracy_settings(config);
  if (!j.is_object() || !j.contains("settings")) {
    *why = where + " does not say which settings it was measured with";
    return std::nullopt;
  }
  if (j["settings"] != wanted) {
    std::string differ;
    for (const auto& [key, value] : wanted.items())
      if (!j["settings"].contains(key) || j["settings"][key] != value) differ += (differ.empty() ? "" : ", ") + key;
    *why = where + " was measured with other settings (" + differ + ")";
    return std::nullopt;
  }
  return accuracy_from_json(text, where, dataset);
}

// A short profiled window after a point (its timings are already taken): traces/<point>/.
void profile_point(const EncoderModel& model, const BenchConfig& config, const PointKey& key,
                   const std::string& run_dir) {
  const TokenBatch batch = bench::synthetic_batch(model.info(), key.batch, key.seq_len, config.seed);
  ProfilerOptions o;
  o.schedule = {0, 0, 1, 2, 1};
  Profiler p(o);
  p.start();
  for (int i = 0; i < 3; ++i) {
    {
      ProfileScope forward("forward");
      (void)model.measured_forward(batch);
    }
    p.step();
  }
  p.stop();
  bench::write_point_traces(p.data(), key, run_dir);
}

}  // namespace

namespace bench {

namespace {

// One point of the grid with its device and dtype's model: tach's own runs, or another engine's in
// its worker (fed the same ids, checked against this model's outputs). Failures are results.
PointResult measure_grid_point(const EncoderModel& model, const BenchConfig& config, const PointKey& key,
                               const TextSource* texts, int default_threads, EngineWorkers& workers,
                               const BenchObserver& observer) {
  const std::string input_name = texts ? "dataset " + config.dataset.path : "synthetic";
  // The estimate first: a point of tach's that cannot fit is skipped with the reason, not crashed into.
  const std::string no_fit =
      config.input == "synthetic" && key.engine == "tach" ? fit_refusal(estimate_input(config, key)) : std::string();
  if (!no_fit.empty()) {
    PointResult r = failed_point(key, no_fit, input_name);
    r.status = "skipped";
    return r;
  }
  set_threads(key.threads > 0 ? key.threads : default_threads);
  PointResult r;
  try {
    r = key.engine == "tach" ? run_point(model, config, key, texts, observer)
                             : workers.run_point(model, key, texts, threads(), observer);
  } catch (const Error& e) { r = failed_point(key, e.what(), input_name); } catch (const std::bad_alloc&) {
    r = failed_point(key, "out of memory (an allocation failed)", input_name);
  }
  if (key.engine == "tach") r.threads_used = threads();
  set_threads(0);
  return r;
}

// The sweep's one model at a time: tach's model of a device and dtype ("device/dtype", its group),
// loaded when a point or a pass needs another; a model that did not load leaves its error.
struct SweepModel {
  std::unique_ptr<EncoderModel> model;
  std::string group, load_error;
};

// A model the sweep cannot measure, or whose head the accuracy pass cannot score, is said once,
// with what can be done with it, instead of failing every point.
void check_measurable(const ModelInfo& mi, const BenchConfig& config, bool accuracy) {
  // A model with no head, no pooling and no LM head has nothing for a point to measure. A causal
  // LM's point measures its prefill (the forward and the LM head at each row's last token).
  check(mi.head != Head::none || mi.embedding || mi.causal_lm,
        config.model + " (" + mi.architecture + ", " + std::to_string(mi.num_layers) + " layers, hidden " +
            std::to_string(mi.hidden_size) +
            ") has no head and is neither an embedding model nor a causal LM: tach bench measures a head (--head "
            "builds one), embeddings or a prefill. tach info -m describes it and tach estimate -m says whether it "
            "fits");
  if (!accuracy || mi.classifier) return;
  // A token classifier and a question-answering model are scored as tach eval scores them; a
  // masked LM has no labelled metric here.
  if (mi.head == Head::token_classification || mi.head == Head::question_answering) return;
  check(mi.head != Head::masked_lm,
        config.model +
            " runs a masked-lm head: the accuracy pass scores sequence classifiers, token classifiers (seqeval) and "
            "question-answering models (SQuAD); a masked LM has no labelled metric in it: drop --accuracy (the "
            "sweep measures the head's forward; tach fill-mask shows its predictions for a text, and tach train "
            "--task mlm reports its evaluation loss and perplexity)");
  check(false, config.model +
                   (mi.embedding ? " is an embedding model (" + mi.pooling + " pooling)" : " is a causal LM") +
                   ": the accuracy pass needs a sequence classifier; drop --accuracy (tach run: --dataset, which turns "
                   "it on; the sweep measures its " +
                   (mi.embedding ? "embeddings)" : "prefill)"));
}

// Loads config.model for device/dtype into m (a failure is kept in m.load_error), with its summary
// in out.models and what loading said in the notes; then the checks that stop the run rather than
// fail every point (check_measurable, tokenizer and label problems).
void load_sweep_model(SweepModel& m, const BenchConfig& config, const std::string& device, const std::string& dtype,
                      bool accuracy, std::optional<TextSource>& texts, SweepOutcome& out,
                      const BenchObserver& observer) {
  m.model.reset();
  m.load_error.clear();
  m.group = device + "/" + dtype;
  try {
    LoadOptions lo;
    lo.device = parse_device(device);
    // The model's bytes where it lives: the GPU's books for a GPU model.
    const MemoryStats before = memory_stats(lo.device);
    lo.compute = compute_dtype(dtype);
    lo.allow_tf32 = config.allow_tf32;
    lo.seed = config.seed;
    lo.adapter = config.adapter;
    lo.head = parse_head(config.head);
    m.model = load_model(config.model, lo);
    const MemoryStats after = memory_stats(lo.device);
    const int64_t bytes = (after.total.current + after.mapped.current) - (before.total.current + before.mapped.current);
    out.models.push_back(summarize_model(*m.model, bytes));
    // A head built new or left out is said once (terminal, run.log), not once per device and dtype.
    for (const std::string& n : out.models.back().notes)
      if (std::find(out.notes.begin(), out.notes.end(), n) == out.notes.end()) {
        out.notes.push_back(n);
        if (observer.on_note) observer.on_note(n);
      }
  } catch (const Error& e) {
    m.model.reset();
    m.load_error = e.what();
    return;
  }
  check_measurable(m.model->info(), config, accuracy);
  // Tokenizer and label problems are the user's to fix before anything is measured: they stop
  // the run rather than fail every point.
  if (texts && !texts->tokenizer) attach_tokenizer(*texts, config, m.model->info());
  if (accuracy && texts && m.model->info().classifier)
    (void)LabelMap(m.model->info().labels).ids_of(texts->examples, texts->name);
}

// What the grid's points and the accuracy passes share as they run.
struct SweepState {
  RunStore& store;
  const BenchConfig& config;
  const BenchObserver& observer;
  const PointSelection& selection;
  bool accuracy;
  SweepOutcome& out;
  SweepModel m;
  std::optional<TextSource> texts;  // the dataset's texts: the points' input, a sequence classifier's pass
  EngineWorkers workers;            // other engines' points and passes: one worker each
  SweepState(RunStore& s, const BenchObserver& o, const PointSelection& sel, bool acc, SweepOutcome& out_)
      : store(s),
        config(s.config()),
        observer(o),
        selection(sel),
        accuracy(acc),
        out(out_),
        workers(s.config(), s.dir()) {}
  // Holds the model of device/dtype, loading it unless it is held.
  void hold(const std::string& device, const std::string& dtype) {
    if (m.model && m.group == device + "/" + dtype) return;
    load_sweep_model(m, config, device, dtype, accuracy, texts, out, observer);
  }
};

// The grid's points in order, skipping those the store has finished and those the selection leaves
// out; each appended to the store as it finishes. Returns each append's milliseconds.
std::vector<double> run_grid_points(SweepState& st, const std::vector<PointKey>& keys, int default_threads) {
  const BenchConfig& config = st.config;
  const bool texts_for_points = config.input == "dataset";
  const std::string input_name = texts_for_points ? "dataset " + config.dataset.path : "synthetic";
  std::vector<double> write_ms;
  for (size_t i = 0; i < keys.size(); ++i) {
    const PointKey& key = keys[i];
    if (stop_requested())
      throw Stopped("stopped before point " + std::to_string(i + 1) + " of " + std::to_string(keys.size()) + " (" +
                    key.id() + "); the points before it are in " + st.store.dir() +
                    ": continue with tach bench --resume " + st.store.dir());
    if (st.store.is_finished(key)) {
      ++st.out.resumed_points;
      continue;
    }
    if (!st.selection.runs(key)) continue;
    if (key.device + "/" + key.dtype != st.m.group) {
      if (st.observer.on_note) st.observer.on_note("loading " + config.model + " for " + key.device + "/" + key.dtype);
      load_sweep_model(st.m, config, key.device, key.dtype, st.accuracy, st.texts, st.out, st.observer);
    }
    if (st.observer.on_point_start) st.observer.on_point_start(key, i, keys.size());
    const PointResult r = st.m.model
                              ? measure_grid_point(*st.m.model, config, key, texts_for_points ? &*st.texts : nullptr,
                                                   default_threads, st.workers, st.observer)
                              : failed_point(key, "the model did not load: " + st.m.load_error, input_name);
    write_ms.push_back(st.store.append(r));
    if (config.profile && r.status == "ok" && st.m.model && key.engine == "tach") {
      try {
        profile_point(*st.m.model, config, key, st.store.dir());
      } catch (const Error& e) {
        if (st.observer.on_note) st.observer.on_note("profile of " + key.id() + " failed: " + e.what());
      }
    }
    if (st.observer.on_point_done) st.observer.on_point_done(r, i, keys.size());
  }
  return write_ms;
}

// The model of `group` ("device/dtype"), which must load: an accuracy pass runs on it.
const EncoderModel& pass_model(SweepState& st, const std::string& group) {
  const std::string device = group.substr(0, group.find('/')), dtype = group.substr(group.find('/') + 1);
  st.hold(device, dtype);
  check(st.m.model != nullptr, "the model did not load: " + st.m.load_error);
  return *st.m.model;
}

// The thread count of a pass: one thread count (tach eval -t, or a sweep of one) is the pass's; a
// sweep over several leaves it all the cores.
int pass_threads(const BenchConfig& config) {
  set_threads(config.threads.size() == 1 ? config.threads.front() : 0);
  const int n = threads();
  set_threads(0);
  return n;
}

// A per-token head's data, read once with tach's model; what reading it said (a sample, tags the
// model lacks, SQuAD v2.0's empty answer, windows cut to the positions) joins the run's notes.
void read_task_data(SweepState& st, const ModelInfo& info, std::optional<TaskAccuracyData>& task) {
  if (task) return;
  task = read_task_accuracy_data(st.config, info);
  for (const std::string& n : task->notes) {
    st.out.notes.push_back(n);
    if (st.observer.on_note) st.observer.on_note(n);
  }
}

// tach's accuracy passes, one per device and dtype (so that --dtype f32,int8 puts them side by
// side), the model loaded last by the sweep first: a sequence classifier's per sample size over
// the texts, or a per-token head's over `task` (read here, with the first pass's model, unless given).
void tach_accuracy_passes(SweepState& st, std::optional<TaskAccuracyData>& task, std::vector<TaskPass>& task_passes) {
  const BenchConfig& config = st.config;
  std::vector<std::string> groups;
  for (const auto& device : config.devices)
    for (const auto& dtype : config.dtypes) groups.push_back(device + "/" + dtype);
  if (st.m.model) std::stable_partition(groups.begin(), groups.end(), [&](const auto& g) { return g == st.m.group; });
  for (const std::string& group : groups) {
    const EncoderModel& model = pass_model(st, group);
    // Past check_measurable, a model without a sequence classifier has a per-token head.
    if (!model.info().classifier) read_task_data(st, model.info(), task);
    if (!task) check(st.texts.has_value(), "no texts for the accuracy pass");
    const std::string data_name = task ? "dataset " + config.dataset.path : st.texts->name;
    const size_t examples =
        task ? task->tagged.sentences.size() + task->squad.questions.size() : st.texts->examples.size();
    if (st.observer.on_note)
      st.observer.on_note("accuracy pass on " + data_name + " (" + std::to_string(examples) + " examples) with " +
                          group);
    set_threads(config.threads.size() == 1 ? config.threads.front() : 0);
    std::vector<AccuracyResult> pass;
    try {
      if (task) {
        task_passes.push_back(task_accuracy_pass(
            *task, model.info(), config, [&model](const TokenBatch& b) { return model.token_logits(b); },
            /*warm_up=*/true));
        pass.push_back(task_passes.back().result);
      } else {
        pass = evaluate(model, *st.texts, config, st.observer);
      }
    } catch (...) {
      set_threads(0);
      throw;
    }
    st.out.accuracy_threads = threads();
    set_threads(0);
    const std::string device = parse_device(group.substr(0, group.find('/'))).str();
    const std::string dtype = group.substr(group.find('/') + 1);
    if (task) task_passes.back().result.device = device, task_passes.back().result.dtype = dtype;
    for (AccuracyResult& r : pass) {
      r.device = device, r.dtype = dtype;
      st.out.accuracy.push_back(std::move(r));
    }
  }
  st.out.accuracy_dataset = task ? "dataset " + config.dataset.path : st.texts->name;
}

// Every other engine's pass beside each of tach's, a kept one (a resumed run's, measured with these
// settings) reused. Returns whether any ran.
bool engine_accuracy_passes(SweepState& st, const std::vector<std::string>& others,
                            const std::vector<EngineAccuracy>& kept, std::optional<TaskAccuracyData>& task) {
  const BenchConfig& config = st.config;
  bool measured = false;
  st.out.engine_accuracy.clear();
  for (const AccuracyResult& tach_pass : st.out.accuracy)
    for (const std::string& engine : others) {
      if (const EngineAccuracy* k = kept_engine_accuracy(kept, engine, tach_pass, config.python)) {
        st.out.engine_accuracy.push_back(*k);
        continue;
      }
      // tach's model makes the ids (its tokenizer, its labels, its windows).
      const std::string group = tach_pass.device + "/" + tach_pass.dtype;
      const EncoderModel& model = pass_model(st, group);
      if (!tach_pass.task.empty()) read_task_data(st, model.info(), task);
      check(task || st.texts.has_value(), "no texts for the accuracy pass");
      if (st.observer.on_note)
        st.observer.on_note("accuracy pass of engine " + engine + " on " + st.out.accuracy_dataset + " (" +
                            std::to_string(tach_pass.examples) + " examples) with " + group);
      st.out.engine_accuracy.push_back(st.workers.run_accuracy(
          model, engine, tach_pass, st.texts ? &*st.texts : nullptr, task ? &*task : nullptr, pass_threads(config)));
      measured = true;
    }
  return measured;
}

// accuracy.json (and, for a per-token head's passes measured now, tach eval's file of them).
void write_accuracy_files(SweepState& st, bool with_engines, const std::optional<TaskAccuracyData>& task,
                          const std::vector<TaskPass>& task_passes) {
  const SweepOutcome& out = st.out;
  nlohmann::json file = nlohmann::json::parse(accuracy_to_json(out.accuracy, out.accuracy_dataset));
  file["settings"] = accuracy_settings(st.config);
  if (with_engines) {
    // tach's predictions, so that a resumed run can compare an engine's pass measured then.
    for (size_t i = 0; i < out.accuracy.size(); ++i) {
      if (!out.accuracy[i].predicted.empty()) file["results"][i]["predictions"] = out.accuracy[i].predicted;
      if (!out.accuracy[i].task.empty()) file["results"][i]["predictions"] = out.accuracy[i].predicted_text;
    }
    file["engines"] = nlohmann::json::parse(engine_accuracy_to_json(out.engine_accuracy));
  }
  st.store.write_text("accuracy.json", file.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (task && !task_passes.empty() && st.m.model) {
    std::string name;
    const std::string text = task_eval_file(*task, st.m.model->info(), st.config, task_passes, &name);
    st.store.write_text(name, text);
  }
}

// The accuracy passes: accuracy.json's results reused where a resumed run measured them with its
// settings, else tach's passes; then every other engine's beside each of tach's.
void accuracy_passes(SweepState& st) {
  const BenchConfig& config = st.config;
  SweepOutcome& out = st.out;
  // Results on disk are reused only by a resumed run, and only when measured with its settings.
  const fs::path acc_path = fs::path(st.store.dir()) / "accuracy.json";
  std::optional<std::vector<AccuracyResult>> kept;
  std::vector<EngineAccuracy> kept_engines;  // other engines' passes, measured with these settings
  if (auto text = read_text(acc_path); text && !st.selection.measure) {  // read back as it is
    kept = accuracy_from_json(*text, acc_path.string(), &out.accuracy_dataset);
    out.engine_accuracy = engine_accuracy_from_json(*text, acc_path.string());
  } else if (text) {
    std::string why;
    kept = matching_accuracy(*text, acc_path.string(), config, &out.accuracy_dataset, &why);
    if (!kept && st.observer.on_note) st.observer.on_note(why + ": measuring the accuracy again");
    if (kept) kept_engines = engine_accuracy_from_json(*text, acc_path.string());
  }
  bool measured = false;
  std::optional<TaskAccuracyData> task;
  std::vector<TaskPass> task_passes;
  if (kept) {
    out.accuracy = std::move(*kept);
  } else if (st.selection.measure) {
    measured = true;
    tach_accuracy_passes(st, task, task_passes);
  }
  std::vector<std::string> others;  // the sweep's other engines: a pass of each beside each of tach's
  for (const auto& engine : config.engines)
    if (engines::is_worker_engine(engine)) others.push_back(engine);
  if (st.selection.measure && !others.empty()) measured |= engine_accuracy_passes(st, others, kept_engines, task);
  if (measured) write_accuracy_files(st, !others.empty(), task, task_passes);
}

}  // namespace

// The grid (or the selection's part of it) against a store that may already hold finished points.
SweepOutcome execute_sweep(RunStore& store, const BenchObserver& observer, const PointSelection& selection,
                           bool accuracy) {
  const BenchConfig& config = store.config();
  if (selection.sweep && config.train.enabled) return execute_train(store, observer, selection);
  SweepOutcome out = outcome_of_store(store, observer);
  const std::vector<PointKey> keys = selection.sweep ? sweep_grid(config) : std::vector<PointKey>{};
  const int default_threads = selection.measure ? pinned_default_threads(store, observer, out) : 0;
  SweepState st(store, observer, selection, accuracy, out);
  // The dataset is read before anything runs, so that a missing column or an empty file is an
  // error now, not after a sweep: the points' texts, and a sequence classifier's labelled texts (a
  // per-token head's tagged words or questions are read with its model, and checked before the run
  // directory was made). A run read back without measuring needs none of it.
  const bool per_token_accuracy = accuracy && !accuracy_task(config).empty();
  if ((config.input == "dataset" || (accuracy && !per_token_accuracy)) && selection.measure)
    st.texts = read_texts(config);
  const StopScope stoppable;  // Ctrl-C ends the sweep between points
  const std::vector<double> write_ms = run_grid_points(st, keys, default_threads);
  // Every point of the grid, in grid order, from the store (finished before or now).
  std::map<std::string, const PointResult*> by_id;
  for (const auto& p : store.finished()) by_id[p.key.id()] = &p;
  for (const auto& key : keys)
    if (auto it = by_id.find(key.id()); it != by_id.end()) out.results.push_back(*it->second);
  out.result_write_ms_median = summarize(write_ms).median;
  if (accuracy) accuracy_passes(st);
  return out;
}

ModelSummary summarize_model(const EncoderModel& model, int64_t memory_bytes) {
  const ModelInfo& info = model.info();
  ModelSummary s;
  s.spec = info.spec;
  s.source = info.source;
  s.architecture = info.architecture;
  s.weights_dtype = info.weights_dtype;
  s.synthetic_weights = info.source.rfind("synthetic", 0) == 0;
  s.parameters = info.parameters;
  s.disk_bytes = info.disk_bytes;
  s.memory_bytes = memory_bytes;
  s.labels = info.labels;
  s.notes = info.notes;
  if (info.classifier) s.task = "sequence classification (" + std::to_string(info.labels.size()) + " labels)";
  else if (info.head == Head::token_classification)
    s.task = "token classification (every token through the body and the classifier, " +
             std::to_string(info.labels.size()) + " labels per token)";
  else if (info.head == Head::question_answering)
    s.task = "question answering (every token through the body and qa_outputs: start and end logits)";
  else if (info.head == Head::masked_lm)
    s.task = "masked-LM forward (every token through the body and the MLM head: " + std::to_string(info.vocab_size) +
             " vocabulary logits per token)";
  else if (info.embedding)
    s.task = "sentence embedding (" + info.pooling + " pooling" + (info.normalized ? ", L2-normalised" : "") + ", " +
             std::to_string(info.embedding_dim) + " dims)";
  else
    s.task = "causal-LM prefill (the forward over the prompt and the LM head at each row's last token, " +
             std::to_string(info.vocab_size) +
             " logits); then, unless --decode-tokens 0, greedy decoding from prompts of the same shape, "
             "timed per step apart from it";
  return s;
}

}  // namespace bench

namespace bench {

RunStore create_sweep_run(const BenchConfig& given, bool here) {
  BenchConfig config = given;
  // A training sweep given a dataset trains on its batches (and times their collation).
  if (config.train.enabled && !config.dataset.path.empty()) config.input = "dataset";
  const std::string auto_note = resolve_auto_device(config);
  validate(config, here);
  if (here) check_model_runs(config);
  // What the accuracy pass reads, before a run directory is made: a per-token head's tagged words
  // or SQuAD questions (with its model, whose labels name integer tags), else labelled texts.
  const bool per_token_accuracy = here && config.accuracy && !bench::accuracy_task(config).empty();
  if (here && ((config.accuracy && !per_token_accuracy) || config.input == "dataset")) check_text_inputs(config);
  if (per_token_accuracy) bench::check_task_accuracy_inputs(config);
  if (here) check_engines_available(config);  // missing packages: refused before a run directory is made
  if (config.run_id.empty())
    config.run_id =
        unique_run_id(config.runs_dir, default_run_id(config.model) + (config.train.enabled ? "-train" : ""));
  RunStore store = RunStore::create((fs::path(config.runs_dir) / config.run_id).string(), config);
  if (!auto_note.empty()) store.notes.insert(store.notes.begin(), auto_note);
  return store;
}

void validate_sweep(const BenchConfig& config, bool here) { validate(config, here); }

}  // namespace bench

namespace {

// Only training sweeps run under mpirun; said before a run directory is made.
void check_training_sweep(const BenchConfig& config) {
  check(config.train.enabled,
        "under mpirun, tach bench runs training sweeps (--train), each point's steps data-parallel over the ranks; "
        "an inference sweep runs in one process");
}

// Under mpirun: rank 0 makes (or opens) the run directory with `lead`, then every rank opens it
// to read. An error on rank 0 is every rank's error, not a wait until the collective deadline.
SweepOutcome execute_on_ranks(dist::Communicator& comm, const std::function<bench::RunStore()>& lead,
                              const BenchObserver& observer) {
  std::optional<bench::RunStore> store;
  std::string dir;
  if (comm.rank() == 0) {
    try {
      store = lead();
      dir = store->dir();
    } catch (const std::exception& e) { dir = std::string("\x01") + e.what(); }
  }
  dir = comm.broadcast(dir, "broadcast of the run directory");
  if (!dir.empty() && dir[0] == '\x01') throw Error(dir.substr(1));
  if (comm.rank() != 0) store = bench::RunStore::open(dir, "");
  SweepOutcome out = bench::execute_sweep(*store, comm.rank() == 0 ? observer : BenchObserver{}, {}, false);
  out.rank = comm.rank();
  out.world_size = comm.size();
  return out;
}

}  // namespace

void check_sweep_config(const BenchConfig& config) {
  BenchConfig c = config;
  (void)resolve_auto_device(c);  // "auto" as the run will read it: the dtypes are checked against it
  validate(c, /*here=*/false);
}

SweepOutcome run_bench(const BenchConfig& given, const BenchObserver& observer) {
  dist::Communicator& comm = dist::Communicator::world();
  if (comm.distributed()) {
    const auto lead = [&] {
      check_training_sweep(given);
      return bench::create_sweep_run(given);
    };
    return execute_on_ranks(comm, lead, observer);
  }
  std::error_code ec;
  const bool made_here = given.run_id.empty() || !fs::exists(fs::path(given.runs_dir) / given.run_id, ec);
  bench::RunStore store = bench::create_sweep_run(given);
  try {
    return bench::execute_sweep(store, observer, {}, store.config().accuracy);
  } catch (const Error&) {
    // Stopped before any point was measured (labels the model lacks, a tokenizer it cannot take): a
    // directory this run made holds its config.json and run.log alone, and goes. Measured points stay.
    const fs::path results = fs::path(store.dir()) / "results.jsonl";
    if (made_here && (!fs::exists(results, ec) || fs::file_size(results, ec) == 0)) fs::remove_all(store.dir(), ec);
    throw;
  }
}

SweepOutcome resume_bench(const std::string& run_dir, const BenchObserver& observer) {
  const auto open = [&] {
    // A tach shrink run's rows carry their variant; a bench resume would append the base model's
    // points beside them.
    check(!fs::exists(fs::path(run_dir) / "shrink.json"),
          run_dir + " is a tach shrink run: continue it with tach shrink --resume " + run_dir);
    bench::RunStore store = bench::RunStore::open(run_dir);
    validate(store.config());
    bench::check_engines_available(store.config());
    return store;
  };
  dist::Communicator& comm = dist::Communicator::world();
  if (comm.distributed()) {
    const auto lead = [&] {
      bench::RunStore store = open();
      check_training_sweep(store.config());
      return store;
    };
    return execute_on_ranks(comm, lead, observer);
  }
  bench::RunStore store = open();
  return bench::execute_sweep(store, observer, {}, store.config().accuracy);
}

SweepOutcome run_eval(const BenchConfig& given, const BenchObserver& observer) {
  BenchConfig config = given;
  config.accuracy = true;
  const std::string auto_note = resolve_auto_device(config);
  validate(config);
  check(config.threads.size() == 1, "tach eval runs its pass with one thread count: give -t once");
  (void)model::summarize_architecture(model::resolve_model(config.model));  // a model that cannot load: now
  bench::check_text_inputs(config);  // and a dataset or tokenizer that cannot be read
  // unique_run_id makes the directory it names (so no other run takes the id): made here too.
  std::error_code ec;
  const bool made_here = config.run_id.empty() || !fs::exists(fs::path(config.runs_dir) / config.run_id, ec);
  if (config.run_id.empty()) config.run_id = unique_run_id(config.runs_dir, default_run_id(config.model) + "-eval");
  const fs::path dir = fs::path(config.runs_dir) / config.run_id;
  bench::RunStore store = bench::RunStore::create(dir.string(), config);
  if (!auto_note.empty()) store.notes.insert(store.notes.begin(), auto_note);
  bench::PointSelection accuracy_only;
  accuracy_only.sweep = false;
  SweepOutcome out;
  try {
    out = bench::execute_sweep(store, observer, accuracy_only, true);
  } catch (const Error&) {
    // The one pass failed (labels the model lacks, a row it cannot take): a directory this run made
    // holds its config.json and run.log alone, and goes; one that was there (--run-id) stays.
    if (made_here) fs::remove_all(dir, ec);
    throw;
  }
  out.eval_only = true;
  return out;
}

}  // namespace tach
