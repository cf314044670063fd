#include "bench/engine_point.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <sstream>

#include "bench/gpu_energy.h"
#include "engines/engine_names.h"
#include "model/checkpoint.h"
#include "tach/error.h"
#include "tach/monitor.h"
#include <cstdio>
#include "tach/runtime.h"

namespace fs = std::filesystem;

namespace tach::bench {

namespace engine_detail {

std::string model_dir(const BenchConfig& config) {
  const model::ModelLocation loc = model::resolve_model(config.model);
  return loc.dir;
}

// ONNX exports and other engines' caches: $XDG_CACHE_HOME/tach/engines, else ~/.cache/tach/engines.
std::string engine_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg != nullptr && *xdg != '\0' ? fs::path(xdg)
                        : home != nullptr              ? fs::path(home) / ".cache"
                                                       : fs::temp_directory_path();
  return (base / "tach" / "engines").string();
}

nlohmann::json ids_json(const Tensor& t) {
  const Tensor h = t.on(Device::cpu());
  nlohmann::json rows = nlohmann::json::array();
  const int64_t B = h.size(0), T = h.size(1);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> row(h.data<int32_t>() + b * T, h.data<int32_t>() + (b + 1) * T);
    rows.push_back(row);
  }
  return rows;
}

std::string versions_text(const nlohmann::json& versions) {
  std::string s;
  for (const auto& [k, v] : versions.items())
    s += (s.empty() ? "" : ", ") + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : fallback;
}

PointResult failed_with(const PointResult& r, const std::string& reason) {
  PointResult f = failed_point(r.key, reason, r.input);
  f.engine_run = r.engine_run;
  f.threads_used = r.threads_used;
  return f;
}

PointResult engine_point_start(const BenchConfig& config, const PointKey& key, const std::string& input, int threads) {
  PointResult r;
  r.key = key;
  r.input = input;
  r.warmup_runs = config.warmup_runs;
  r.threads_used = threads;
  r.engine_run.log = "engines/" + key.engine + ".log";
  return r;
}

nlohmann::json load_request(const BenchConfig& config, const PointKey& key, const std::string& task, int threads,
                            nlohmann::json train) {
  return {{"op", "load"},
          {"model", fs::absolute(model_dir(config)).string()},
          {"task", task},
          {"dtype", key.dtype},
          {"device", key.device},
          {"threads", threads},
          {"cache_dir", engine_cache_dir()},
          {"train", std::move(train)}};
}

}  // namespace engine_detail

using namespace engine_detail;

namespace {

using Clock = std::chrono::steady_clock;

// The largest difference allowed between two engines' outputs, relative to the largest magnitude
// of tach's (at least 1): f32 engines differ by their reduction orders (1e-5 is typical on these
// models; 2e-3 leaves room for the GEMM libraries' blocking over deep layers); bf16 and f16 round
// every activation to 8 or 11 bits.
double relative_tolerance(const std::string& dtype) {
  if (dtype == "bf16") return 5e-2;
  if (dtype == "f16") return 1e-2;
  return 2e-3;
}

struct OutputCheck {
  std::string name, note;
  double max_abs_diff = -1, tolerance = 0;
  bool checked = false, agree = false;
};

// One engine output against tach's. mask: [B, T] when the output is per token (padding skipped).
void compare_values(const nlohmann::json& got, const Tensor& want_tensor, const Tensor* mask, int64_t component,
                    int64_t components, OutputCheck& c) {
  const Tensor want = want_tensor.on(Device::cpu()).to(DType::f32);
  const auto shape = got.at("shape").get<std::vector<int64_t>>();
  const auto& data = got.at("data");
  const int64_t n = want.numel() / components;
  const int64_t count = engines::shape_elements(shape);
  if (count != n || int64_t(data.size()) != n) {
    c.note = c.name + ": the engine's shape [" +
             [&] {
               std::string s;
               for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
               return s;
             }() +
             "] holds " + std::to_string(data.size()) + " values, tach's " + std::to_string(n);
    c.checked = false;
    return;
  }
  const int64_t per_token = mask ? n / mask->numel() : 0;
  double diff = 0, largest = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (mask && mask->data<int32_t>()[i / per_token] == 0) continue;
    const double w = want.data<float>()[i * components + component];
    const double g = data[size_t(i)].is_number() ? data[size_t(i)].get<double>() : NAN;
    diff = std::max(diff, std::isfinite(g) ? std::abs(g - w) : INFINITY);
    largest = std::max(largest, std::abs(w));
  }
  c.max_abs_diff = std::max(c.max_abs_diff, diff);
  c.tolerance = std::max(c.tolerance, largest);
  c.checked = true;
}

OutputCheck check_outputs(const EncoderModel& model, const TokenBatch& batch, const nlohmann::json& outputs,
                          const std::string& dtype) {
  const ModelInfo& info = model.info();
  OutputCheck c;
  const Tensor mask = batch.attention_mask.on(Device::cpu());
  try {
    if (info.classifier) {
      c.name = "logits";
      compare_values(outputs.at("logits"), model.classify(batch), nullptr, 0, 1, c);
    } else if (info.head == Head::question_answering) {
      c.name = "start_logits, end_logits";
      const Tensor t = model.token_logits(batch);  // [B, T, 2]
      compare_values(outputs.at("start_logits"), t, &mask, 0, 2, c);
      if (c.checked) compare_values(outputs.at("end_logits"), t, &mask, 1, 2, c);
    } else if (info.head == Head::token_classification || info.head == Head::masked_lm) {
      c.name = "logits";
      compare_values(outputs.at("logits"), model.token_logits(batch), &mask, 0, 1, c);
    } else if (info.embedding) {
      c.name = "last_hidden_state";
      compare_values(outputs.at("last_hidden_state"), model.hidden_states(batch), &mask, 0, 1, c);
    } else if (info.causal_lm) {
      c.name = "logits";
      compare_values(outputs.at("logits"), model.lm_logits(batch), &mask, 0, 1, c);
    } else {
      c.note = "no output to compare for this model";
    }
  } catch (const nlohmann::json::exception& e) {
    c.checked = false;
    c.note = std::string("the engine's outputs lack what tach compares: ") + e.what();
  }
  if (c.checked) {
    c.tolerance *= relative_tolerance(dtype);
    c.agree = c.max_abs_diff <= c.tolerance;
  }
  return c;
}

// CPU seconds a process has used (its own, and its children's it has waited for): procfs, -1 where
// it cannot be read.
double process_cpu_s(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 17 && rest >> field; ++i)
    if (i >= 14) ticks += std::atof(field.c_str());  // utime, stime, cutime, cstime
  return ticks / double(sysconf(_SC_CLK_TCK));
}

// How many calls the next time request asks for: enough for about 0.1 s on tach's clock (so that a
// request's round trip is spread over them), never past what the rule could still use.
int64_t next_chunk(const StoppingRule& rule, const std::vector<double>& latencies_s) {
  const int64_t n = int64_t(latencies_s.size());
  int64_t k = 1;
  if (n > 0) {
    std::vector<double> sorted = latencies_s;
    std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
    const double median = std::max(sorted[sorted.size() / 2], 1e-7);
    k = std::clamp<int64_t>(int64_t(0.1 / median), 1, 64);
  }
  const int64_t most = rule.runs > 0 ? rule.runs : rule.max_runs;
  return std::max<int64_t>(1, std::min(k, most - n));
}

// A training sweep's LoRA and QLoRA points on the PyTorch engines need peft (and QLoRA
// bitsandbytes), which their worker's ready line lists among its versions when it can import them.
void check_training_packages(const BenchConfig& config, const std::string& engine, const nlohmann::json& versions) {
  if (!config.train.enabled || (engine != "torch" && engine != "torch-compile")) return;
  const auto& methods = config.train.methods;
  const bool lora = std::find(methods.begin(), methods.end(), "lora") != methods.end();
  const bool qlora = std::find(methods.begin(), methods.end(), "qlora") != methods.end();
  std::vector<std::string> missing;
  if ((lora || qlora) && !versions.contains("peft")) missing.push_back("peft");
  if (qlora && !versions.contains("bitsandbytes")) missing.push_back("bitsandbytes");
  if (missing.empty()) return;
  std::string names, install = "python3 -m pip install";
  for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m, install += " " + m;
  const std::string python = config.python.empty() ? "python3" : config.python;
  const char* them = missing.size() == 1 ? "it" : "them";
  throw engines::EngineUnavailable("engine " + engine + "'s " + (qlora ? std::string("QLoRA") : "LoRA") +
                                       " points (--method) need the Python package" +
                                       (missing.size() == 1 ? " " : "s ") + names + ", which " + python +
                                       " cannot import: install " + them + " with `" + install +
                                       "`, or name a Python that has " + them + " with --python PATH",
                                   missing, install);
}

}  // namespace

nlohmann::json inputs_request(const TokenBatch& batch) {
  nlohmann::json j = {{"op", "inputs"},
                      {"input_ids", ids_json(batch.input_ids)},
                      {"attention_mask", ids_json(batch.attention_mask)}};
  if (batch.token_type_ids.defined()) j["token_type_ids"] = ids_json(batch.token_type_ids);
  return j;
}

std::string engine_task(const ModelInfo& info) {
  if (info.classifier) return "sequence-classification";
  if (info.head == Head::token_classification) return "token-classification";
  if (info.head == Head::question_answering) return "question-answering";
  if (info.head == Head::masked_lm) return "masked-lm";
  if (info.embedding) return "feature-extraction";
  return "causal-lm";
}

void check_engines_available(const BenchConfig& config) {
  const bool others = std::any_of(config.engines.begin(), config.engines.end(), engines::is_worker_engine);
  if (!others) return;
  usage_check(
      !model_dir(config).empty(), config.model + " has synthetic weights, which only tach builds: --engine " + [&] {
        std::string s;
        for (const auto& e : config.engines)
          if (engines::is_worker_engine(e)) s += (s.empty() ? "" : ",") + e;
        return s;
      }() + " needs a model directory or a hub id with its weights (-m DIR)");
  for (const auto& engine : config.engines)
    if (engines::is_worker_engine(engine))
      check_training_packages(config, engine, engine_detail::worker_versions(engine, config.python));
}

nlohmann::json engine_detail::worker_versions(const std::string& engine, const std::string& python) {
  // Its log goes to a directory of its own under the system's temporary one, removed whatever
  // happens: nothing of a refused engine is left in a run directory, which does not exist yet.
  const fs::path logs = fs::temp_directory_path() / ("tach-engine-check-" + std::to_string(getpid()));
  const std::string log = (logs / (engine + ".log")).string();
  nlohmann::json versions;
  try {
    auto client = engines::EngineClient::start(engines::worker_launch(engine, python, log));
    client->quit();
    versions = client->ready().versions;
  } catch (const engines::EngineUnavailable&) {
    fs::remove_all(logs);
    throw;
  } catch (const Error& e) {
    fs::remove_all(logs);
    throw Error("engine " + engine + "'s worker (" + (python.empty() ? "python3" : python) +
                " -m tach.engines) did not start: " + e.what());
  }
  std::error_code ec;
  fs::remove_all(logs, ec);
  return versions;
}

EngineWorkers::Worker& EngineWorkers::started(const std::string& engine) {
  Worker& w = workers_[engine];
  if (w.client && w.client->alive()) return w;
  w = Worker{};
  start_worker(w, engine);
  return w;
}

void EngineWorkers::start_worker(Worker& w, const std::string& engine) {
  const std::string log = (fs::path(run_dir_) / "engines" / (engine + ".log")).string();
  w.client = engines::EngineClient::start(engines::worker_launch(engine, config_.python, log));
  w.ping_us = engines::ping_round_trip_ns(*w.client) / 1e3;
}

PointResult EngineWorkers::run_point(const EncoderModel& tach_model, const PointKey& key, const TextSource* texts,
                                     int threads, const BenchObserver& observer) {
  PointResult r = engine_point_start(config_, key, texts ? texts->name : "synthetic", threads);
  const ModelInfo& info = tach_model.info();
  try {
    // The ids tach's tokenizer makes for the point: its synthetic batch, or its first dataset batch
    // (a worker times calls on one batch of inputs).
    std::vector<size_t> rows(size_t(key.batch));
    std::iota(rows.begin(), rows.end(), size_t{0});
    for (auto& row : rows) row %= texts ? std::max<size_t>(texts->examples.size(), 1) : 1;
    const TokenBatch batch = texts ? text_batch(*texts, info, rows, key.seq_len, config_.bucketing)
                                   : synthetic_batch(info, key.batch, key.seq_len, config_.seed);
    Worker& w = started(key.engine);
    measure(w, tach_model, key, batch, threads, r, observer);
  } catch (const engines::WorkerFailure& e) {
    workers_.erase(key.engine);  // a fresh worker for the next point
    return failed_with(r, std::string("engine ") + key.engine + ": " + e.what());
  } catch (const Error& e) { return failed_with(r, e.what()); }
  return r;
}

void EngineWorkers::load(Worker& w, const PointKey& key, const std::string& loaded, const nlohmann::json& request,
                         PointResult::EngineRun& e) {
  if (w.loaded != loaded) {
    if (!w.loaded.empty()) {  // it holds another model, and a worker loads one in its life
      w.client->quit();
      w = Worker{};
      start_worker(w, key.engine);
    }
    w.loaded.clear();
    w.load_reply = w.client->call(request);
    w.loaded = loaded;
  }
  // One-time costs: the load that brought this model (an earlier point's, when it was loaded then).
  const engines::EngineLoad one_time = engines::load_from_reply(w.load_reply, key.engine);
  e.load_s = one_time.load_s, e.setup_kind = one_time.setup_kind, e.setup_s = one_time.setup_s;
  e.setup_cached = one_time.setup_cached, e.setup_cache_age_s = one_time.setup_cache_age_s;
}

void EngineWorkers::measure(Worker& w, const EncoderModel& tach_model, const PointKey& key, const TokenBatch& batch,
                            int threads, PointResult& r, const BenchObserver& observer) {
  const ModelInfo& info = tach_model.info();
  engines::EngineClient& c = *w.client;
  PointResult::EngineRun& e = r.engine_run;
  e.versions = versions_text(c.ready().versions);
  e.task = engine_task(info);
  e.ping_round_trip_us = w.ping_us;
  load(w, key, key.device + "/" + key.dtype + "/" + std::to_string(threads),
       load_request(config_, key, e.task, threads, nullptr), e);
  (void)c.call(inputs_request(batch));
  // The outputs first: a disagreement is a finding recorded with the point, not a silent number.
  const OutputCheck compared =
      check_outputs(tach_model, batch, engines::outputs_of(c.call({{"op", "outputs"}}), key.engine), key.dtype);
  e.outputs_checked = compared.checked, e.outputs_agree = compared.agree, e.outputs_name = compared.name;
  e.outputs_note = compared.note, e.max_abs_diff = compared.max_abs_diff, e.tolerance = compared.tolerance;
  e.first_call_s = number_or(c.call({{"op", "prepare"}}), "first_call_s", 0);
  if (config_.warmup_runs > 0)
    (void)c.call({{"op", "time"}, {"calls", config_.warmup_runs}},
                 engines::request_deadline_s("time", config_.warmup_runs, std::max(e.first_call_s, 1.0)));

  r.padded_tokens_per_batch = double(batch.batch() * batch.seq_len());
  r.real_tokens_per_batch = double(batch.real_tokens());
  const TimedCalls timed = time_under_rule(c, config_, key, threads, e.first_call_s, r, observer);
  std::vector<double> batch_ms, sample_ms;
  for (double s : timed.seconds) {
    batch_ms.push_back(s * 1e3);
    sample_ms.push_back(s * 1e3 / double(key.batch));
  }
  r.batch_latency_samples_ms = batch_ms;
  r.batch_latency_ms = distribution(batch_ms);
  r.sample_latency_ms = distribution(sample_ms);
  // The work of the same forward in tach's ops' declared costs: FLOP/s comparable across engines.
  r.flops_per_batch = tach_model.forward_cost(batch.batch(), batch.seq_len()).flops;
  set_throughput_from_median(r);
  r.finished_at = utc_now_iso();
}

// A GPU point's energy: NVML's over the worker's measured calls, and per sample and token of a call
// (or why not).
void record_engine_gpu_energy(PointResult& r, const GpuEnergy& e, const std::string& why_not, int64_t calls,
                              const PointKey& key) {
  const NvmlEnergyRecord nvml = nvml_energy_record(e, EnergyRuns::worker_calls, calls, why_not);
  r.energy_source = nvml.source;
  if (nvml.j < 0) return;
  r.energy_j = nvml.j;
  r.energy_j_per_sample = e.j_per_run / double(key.batch);
  r.energy_j_per_token = r.real_tokens_per_batch > 0 ? e.j_per_run / r.real_tokens_per_batch : -1;
}

TimedCalls time_under_rule(engines::EngineClient& c, const BenchConfig& config, const PointKey& key, int threads,
                           double first_call_s, PointResult& r, const BenchObserver& observer) {
  PointResult::EngineRun& e = r.engine_run;
  (void)c.call({{"op", "memory"}, {"reset", true}});
  TimedCalls out;
  std::vector<double>& latencies_s = out.seconds;
  std::vector<double> overhead_us;
  double measured_s = 0;
  RaplEnergy rapl;
  if (rapl.available()) (void)rapl.joules();
  // On a GPU, NVML's energy counter (the whole board, whoever drives it) read by tach after each
  // chunk of the worker's calls: a step of the counter is then placed to within a chunk.
  const bool on_gpu = parse_device(key.device).kind == DeviceKind::cuda;
  std::optional<NvmlEnergyCounter> nvml;
  std::optional<EnergyCounterSteps> energy_steps;
  if (on_gpu && config.gpu_energy_window_s > 0) {
    nvml.emplace(parse_device(key.device));
    if (nvml->found()) energy_steps.emplace(nvml->reader());
  }
  if (observer.on_measure_begin) observer.on_measure_begin(key);
  CpuLoadWindow load_window;
  const double worker_cpu0 = process_cpu_s(c.process().pid());
  const auto wall0 = Clock::now();
  double expected_call_s = std::max(first_call_s, 0.01);
  while (r.stopped_by.empty()) {
    const int64_t k = next_chunk(config.stop, latencies_s);
    const auto t0 = Clock::now();
    nlohmann::json reply =
        c.call({{"op", "time"}, {"calls", k}}, engines::request_deadline_s("time", k, expected_call_s));
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::vector<int64_t> ns = engines::timed_ns(reply, k, key.engine);
    double chunk_s = 0;
    int64_t counted = 0;
    for (int64_t v : ns) {
      const double s = double(v) * 1e-9;
      chunk_s += s;
      if (!r.stopped_by.empty()) continue;  // past the rule: run, not counted
      latencies_s.push_back(s);
      measured_s += s;
      ++counted;
      r.stopped_by = stop_reason(config.stop, latencies_s, measured_s);
    }
    if (energy_steps) {
      for (size_t i = 1; i < ns.size(); ++i) energy_steps->count_run();
      energy_steps->read_after_run();
    }
    out.replies.emplace_back(std::move(reply), counted);
    overhead_us.push_back(std::max(0.0, wall - chunk_s) / double(k) * 1e6);
    expected_call_s = std::max(chunk_s / double(k), 1e-4);
    load_window.sample();
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
  if (observer.on_measure_end) observer.on_measure_end(key, int64_t(latencies_s.size()) * key.batch);
  const double rapl_j = rapl.available() ? rapl.joules() : -1;
  GpuEnergy gpu_energy;
  if (energy_steps) {
    // More calls (not timed) only where the measured ones did not span two steps a window apart.
    gpu_energy = finish_energy_window(
        *energy_steps,
        [&] {
          (void)c.call({{"op", "time"}, {"calls", 1}}, engines::request_deadline_s("time", 1, expected_call_s));
        },
        config.gpu_energy_window_s);
  }
  const double worker_cpu_s = process_cpu_s(c.process().pid()) - worker_cpu0;
  // The worker's CPU is the point's own work, not another process's load on it.
  CpuLoad l = load_window.finish(threads);
  if (l.measured && worker_cpu0 >= 0 && l.window_s > 0) {
    l.other_cores_mean = std::max(0.0, l.other_cores_mean - worker_cpu_s / l.window_s);
    l.other_cores_max = std::max(l.other_cores_mean, l.other_cores_max - worker_cpu_s / l.window_s);
    l.contended = threads_share_cores(l.other_cores_mean, threads, l.cores);
  }
  r.load = load_of(l);
  if (l.contended) {
    char text[240];
    std::snprintf(text, sizeof text,
                  "; CONTENDED: other processes used %.2f of %d cores beside the worker's %d thread(s), so its "
                  "figures (and this rule's precision) are the shared machine's, not the engine's",
                  l.other_cores_mean, l.cores, threads);
    r.stopped_by += text;
  }
  e.chunks = int64_t(overhead_us.size());
  std::nth_element(overhead_us.begin(), overhead_us.begin() + long(overhead_us.size() / 2), overhead_us.end());
  e.protocol_us_per_call = overhead_us[overhead_us.size() / 2];

  const engines::EngineMemory mem = engines::memory_from_reply(c.call({{"op", "memory"}, {"reset", false}}));
  r.rss_bytes = mem.rss_bytes;
  r.peak_rss_bytes = mem.peak_rss_bytes;
  r.peak_rss_is_per_point = false;  // the worker's peak since it started (its load included)
  e.device_allocated_peak_bytes = mem.device_allocated_peak_bytes;
  e.device_reserved_peak_bytes = mem.device_reserved_peak_bytes;

  const double n = double(latencies_s.size());
  r.measured_runs = int(latencies_s.size());
  if (on_gpu) {
    record_engine_gpu_energy(r, gpu_energy, nvml ? nvml->why_not() : kEnergyWindowOff, int64_t(latencies_s.size()),
                             key);
  } else if (rapl_j >= 0) {
    r.energy_j = rapl_j;
    r.energy_source =
        "RAPL (package + DRAM) over the measured runs, whole machine (the worker's calls and tach's waits)";
    r.energy_j_per_sample = r.energy_j / (n * double(key.batch));
    r.energy_j_per_token = r.real_tokens_per_batch > 0 ? r.energy_j / (n * r.real_tokens_per_batch) : -1;
  } else {
    r.energy_source = "unavailable: " + rapl.unavailable_reason();
  }
  r.measured_wall_s = wall_s;
  r.bookkeeping_ms = (wall_s - measured_s) * 1e3;
  return out;
}

}  // namespace tach::bench
