// One point of a sweep: warm-up, measured runs until the stopping rule says enough, then the
// statistics and memory of that point. Only the model call is inside a batch's timing;
// tokenization is timed on its own.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>

#include "bench/bench_internal.h"
#include "ops/infer_attention_kernel.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/stats.h"

namespace tach::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Energy on a GPU (measure_gpu_energy): the energy of one forward, and the measured runs' total
// derived from it (the counter is too coarse to read over the timed runs themselves).
void record_gpu_energy(PointResult& r, Device device, const std::function<void()>& forward, int64_t measured_runs,
                       double window_s) {
  const NvmlEnergyCounter counter(device);
  if (!counter.found()) {
    r.energy_source = counter.why_not();
    return;
  }
  const GpuEnergy e = measure_energy_per_run(counter.reader(), forward, window_s);
  if (e.j_per_run < 0) {
    r.energy_source = e.source;
    return;
  }
  r.energy_j = e.j_per_run * double(measured_runs);
  char text[400];
  std::snprintf(text, sizeof text,
                "NVML total-energy counter of %s (the whole GPU, every process): %lld forwards back to back after the "
                "timed runs, between two steps of the counter %.2f s apart (mean power %.0f W); j is that energy per "
                "forward times the %lld measured runs",
                device.str().c_str(), static_cast<long long>(e.runs), e.window_s, e.mean_power_w,
                static_cast<long long>(measured_runs));
  r.energy_source = text;
}

// The point's decoding (BenchConfig::decode_tokens): one untimed generation, then one timed, from
// synthetic prompts of the point's batch and length (every row decodes every step: EOS ignored).
void record_decode(PointResult& r, const Model& model, const BenchConfig& config, const PointKey& key) {
  const ModelInfo& info = model.info();
  PointResult::Decode& d = r.decode;
  if (info.max_positions > 0 && key.seq_len + config.decode_tokens > info.max_positions) {
    d.method = "not run: " + std::to_string(key.seq_len) + " prompt tokens and " +
               std::to_string(config.decode_tokens) + " new ones exceed the model's " +
               std::to_string(info.max_positions) + " positions";
    return;
  }
  const TokenBatch prompts = synthetic_batch(info, key.batch, key.seq_len, config.seed);
  GenerateOptions go;
  go.max_new_tokens = config.decode_tokens;
  go.stop_at_eos = false;
  (void)model.generate(prompts, go);  // caches, oneDNN's kernels for one-row shapes
  const Generation g = model.generate(prompts, go);
  d.method = g.decode_method;
  d.time_to_first_token_ms = g.time_to_first_token_s * 1e3;
  if (g.decode_step_s.empty()) return;  // one new token: the prefill chose it
  std::vector<double> step_ms;
  for (double s : g.decode_step_s) step_ms.push_back(s * 1e3);
  d.step_ms = distribution(step_ms);
  d.step_samples_ms = step_ms;  // tokens/s: set_throughput_from_median
  d.weight_bytes_per_step = g.decode_weight_bytes;
  d.cache_bytes_per_step = g.decode_cache_bytes;
  const DecodeLimit limit =
      decode_limit(g.decode_weight_bytes + g.decode_cache_bytes, parse_device(key.device), d.step_ms.median / 1e3);
  d.memory_bytes_per_s = limit.bandwidth;
  d.limit_ms = limit.limit_s * 1e3;
  d.fraction_of_limit = limit.fraction;
  d.memory_read_bytes_per_s = limit.read_bandwidth;
  d.read_limit_ms = limit.read_limit_s * 1e3;
  d.fraction_of_read_limit = limit.read_fraction;
  d.bandwidth_method = limit.method;
  d.warning = limit.warning;
}

}  // namespace

void record_allocator(PointResult& r, Device device) {
  const MemoryStats ms = memory_stats(device);
  for (int c = 0; c < kMemoryCategoryCount; ++c)
    r.allocator[std::string(memory_category_name(MemoryCategory(c)))] = {ms.by_category[size_t(c)].current,
                                                                         ms.by_category[size_t(c)].peak};
  r.allocator["total"] = {ms.total.current, ms.total.peak};
  r.allocator["mapped"] = {ms.mapped.current, ms.mapped.peak};
  r.allocator["cached"] = {ms.cached.current, ms.cached.peak};
}

PointResult run_point(const EncoderModel& model, const BenchConfig& config, const PointKey& key,
                      const TextSource* texts, const BenchObserver& observer) {
  const ModelInfo& info = model.info();
  PointResult r;
  r.key = key;
  r.input = texts ? texts->name : "synthetic";
  r.warmup_runs = config.warmup_runs;
  r.gemm_tf32 = info.gemm_tf32;
  r.activations = dtype_name(info.activations);

  // Dataset batches start at seeded random places, so that bucketed (sorted) pools are sampled
  // over their whole length rather than from their short end.
  std::mt19937_64 rng(config.seed ^ uint64_t(key.batch * 1000003 + key.seq_len));
  std::vector<size_t> order;  // example indices sorted by length, for bucketing
  if (texts && config.bucketing) {
    order.resize(texts->examples.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return texts->examples[a].text.size() + texts->examples[a].text_pair.size() <
             texts->examples[b].text.size() + texts->examples[b].text_pair.size();
    });
  }
  if (texts && order.empty()) {
    order.resize(texts->examples.size());
    std::iota(order.begin(), order.end(), size_t{0});
  }
  // B consecutive examples of `order` from a random start: similar lengths when bucketing.
  const auto pick_rows = [&] {
    std::vector<size_t> rows(size_t(key.batch));
    const size_t start = rng() % order.size();
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = order[(start + i) % order.size()];
    return rows;
  };

  const Device device = info.device;
  const bool on_gpu = device.kind == DeviceKind::cuda;
  reset_memory_peaks(Device::cpu());
  if (on_gpu) reset_memory_peaks(device);
  r.peak_rss_is_per_point = reset_peak_rss();
  const double flops = model.forward_cost(key.batch, key.seq_len).flops;

  // Warm-up: caches, packed weights, allocator blocks. Never measured.
  for (int i = 0; i < config.warmup_runs; ++i) {
    TokenBatch b = texts ? text_batch(*texts, info, pick_rows(), key.seq_len, config.bucketing)
                         : synthetic_batch(info, key.batch, key.seq_len, config.seed);
    (void)model.measured_forward(b);
  }

  std::vector<double> latencies_s, tokenize_s, gpu_ms;
  double padded_tokens = 0, real_tokens = 0, flops_total = 0;
  RaplEnergy rapl;
  if (!on_gpu && rapl.available()) (void)rapl.joules();  // starts the counters at this point
  DeviceTimer gpu_timer(device);
  if (observer.on_measure_begin) observer.on_measure_begin(key);
  // The kernels the measured runs' attention ran, noted by the ops from here on.
  const uint64_t attention_mark = ops::infer_attention_mark();
  CpuLoadWindow load_window;  // other processes' CPU use while the runs are timed
  const auto wall0 = Clock::now();
  double measured_s = 0;
  const TokenBatch synthetic = texts ? TokenBatch{} : synthetic_batch(info, key.batch, key.seq_len, config.seed);
  TokenBatch last_text_batch;
  for (;;) {
    const TokenBatch* batch = &synthetic;
    if (texts) {
      const auto t0 = Clock::now();
      last_text_batch = text_batch(*texts, info, pick_rows(), key.seq_len, config.bucketing);
      tokenize_s.push_back(seconds_since(t0));
      batch = &last_text_batch;
    }
    const auto t0 = Clock::now();
    if (on_gpu) gpu_timer.start();
    (void)model.measured_forward(*batch);  // returns on the host: a GPU's work is finished
    if (on_gpu) gpu_timer.stop();
    const double s = seconds_since(t0);
    if (on_gpu) gpu_ms.push_back(gpu_timer.elapsed_ms());
    latencies_s.push_back(s);
    measured_s += s;
    padded_tokens += double(batch->batch() * batch->seq_len());
    real_tokens += double(batch->real_tokens());
    flops_total += texts ? model.forward_cost(batch->batch(), batch->seq_len()).flops : flops;
    load_window.sample();  // outside the timing: reads procfs at most every kLoadSubWindowS
    r.stopped_by = stop_reason(config.stop, latencies_s, measured_s);
    if (!r.stopped_by.empty()) break;
  }
  const double wall_s = seconds_since(wall0);
  r.attention = ops::infer_attention_kernels_since(attention_mark);
  // The measured runs end here: an outside clock around them stops before the load's wait.
  if (observer.on_measure_end) observer.on_measure_end(key, int64_t(latencies_s.size()) * key.batch);
  const double rapl_j = !on_gpu && rapl.available() ? rapl.joules() : -1;  // before the load's wait, if any
  record_load(r, load_window);
  if (on_gpu && config.gpu_energy_window_s > 0) {
    // The last batch measured, again and again (a dataset's batches vary; its last is one of them).
    const TokenBatch& energy_batch = texts ? last_text_batch : synthetic;
    record_gpu_energy(
        r, device, [&] { (void)model.measured_forward(energy_batch); }, int64_t(latencies_s.size()),
        config.gpu_energy_window_s);
  } else if (on_gpu) {
    r.energy_source = "not measured (--energy-window 0)";
  } else if (rapl.available()) {
    r.energy_j = rapl_j;
    r.energy_source = "RAPL (package + DRAM) over the measured runs, whole machine";
  } else {
    r.energy_source = "unavailable: " + rapl.unavailable_reason();
  }
  const auto n = static_cast<double>(latencies_s.size());

  r.measured_runs = int(latencies_s.size());
  std::vector<double> batch_ms, sample_ms, tok_ms;
  for (double s : latencies_s) {
    batch_ms.push_back(s * 1e3);
    sample_ms.push_back(s * 1e3 / double(key.batch));
  }
  for (double s : tokenize_s) tok_ms.push_back(s * 1e3);
  r.batch_latency_samples_ms = batch_ms;
  r.batch_latency_ms = distribution(batch_ms);
  r.sample_latency_ms = distribution(sample_ms);
  r.tokenize_ms_per_batch = distribution(tok_ms);
  if (!gpu_ms.empty()) r.gpu_time_ms = distribution(gpu_ms);
  r.padded_tokens_per_batch = padded_tokens / n;
  r.real_tokens_per_batch = real_tokens / n;
  r.flops_per_batch = flops_total / n;
  if (r.energy_j >= 0) {
    r.energy_j_per_sample = r.energy_j / (n * double(key.batch));
    r.energy_j_per_token = real_tokens > 0 ? r.energy_j / real_tokens : -1;
  }

  const ProcessMemory pm = read_process_memory();
  r.rss_bytes = pm.rss_bytes;
  r.peak_rss_bytes = pm.peak_rss_bytes;
  if (on_gpu)
    for (const CudaDeviceInfo& d : cuda_devices())
      if (d.index == device.index) r.device_memory_used_bytes = int64_t(d.total_bytes - d.free_bytes);
  record_allocator(r, device);
  r.measured_wall_s = wall_s;
  r.timer_overhead_ns = timer_overhead_seconds() * 1e9;
  r.bookkeeping_ms = (wall_s - measured_s - std::accumulate(tokenize_s.begin(), tokenize_s.end(), 0.0)) * 1e3;
  // After the memory figures: they are the prefill's, without the key/value cache.
  if (info.causal_lm && config.decode_tokens > 0) record_decode(r, model, config, key);
  set_throughput_from_median(r);  // after the decode steps: theirs too
  r.finished_at = utc_now_iso();
  return r;
}

}  // namespace tach::bench
