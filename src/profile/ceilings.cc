// Machine ceilings for the roofline: peak GEMM throughput per dtype through the GEMM library
// tach uses, and memory bandwidth from a STREAM triad. Measured once per machine and cached in
// $XDG_CACHE_HOME/tach (or ~/.cache/tach), keyed by CPU model, cores and threads. A measurement
// taken while other processes were busy is not cached: one slow figure would otherwise make every
// later verdict claim ops ran above their ceiling. Such a measurement is kept for the rest of the
// process instead: one run (a sweep's points, a training run) judges every point against one
// ceiling, rather than against a figure that moves with the load from point to point.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/parallel.h"
#include "core/utc_time.h"
#include "cpu/gemm.h"
#include "cpu/int8_linear.h"
#include "tach/error.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/system_info.h"
#include "tach/plain_number.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

// A Ctrl-C while the full ceilings are measured (seconds, more under load) ends the measurement
// between repetitions: its caller (a training run's post-training work, a sweep) keeps what it
// measured and exits as stopped. Nothing half-measured is cached or used.
void throw_if_stop_requested(bool stoppable) {
  if (stoppable && stop_requested())
    throw Stopped("stopped while measuring this machine's ceilings; nothing was cached");
}

double best_seconds(int reps, const std::function<void()>& fn, bool stoppable) {
  throw_if_stop_requested(stoppable);
  fn();  // warm-up: primitive creation, page faults
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    throw_if_stop_requested(stoppable);
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

fs::path cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "tach";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "tach";
  return fs::temp_directory_path() / "tach";
}

MachineCeilings measure_once(const SystemInfo& sys);

// Measures; while other processes hold more than kMaxOtherCores, waits and tries again (3 tries).
// The result says how loaded the machine was, so a loaded figure is never taken for a quiet one.
MachineCeilings measure(const SystemInfo& sys) {
  MachineCeilings c;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt)
      for (int i = 0; i < 20; ++i) {  // 2 s, a Ctrl-C heard within a tenth of one
        throw_if_stop_requested(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    CpuLoadWindow window;
    c = measure_once(sys);
    const CpuLoad load = window.finish(c.threads);
    c.load_measured = load.measured;
    c.other_cores = load.other_cores_mean;
    c.load_average = load.load_average_1m;
    c.under_load = !load.measured || c.other_cores > kMaxOtherCores;
    if (!c.under_load) break;
  }
  return c;
}

// STREAM triad a = b + s*c over 3 arrays of 32 Mi floats (384 MiB), far past any cache; best of 5.
double stream_triad_bytes_per_s(bool stoppable) {
  const int64_t m = int64_t(32) << 20;
  std::vector<float> x(static_cast<size_t>(m)), y(static_cast<size_t>(m), 1.f), z(static_cast<size_t>(m), 2.f);
  const double tt = best_seconds(
      5,
      [&] {
        core::parallel_for(m, 1 << 16, [&](int64_t begin, int64_t end) {
#pragma omp simd
          for (int64_t i = begin; i < end; ++i) x[size_t(i)] = y[size_t(i)] + 3.f * z[size_t(i)];
        });
      },
      stoppable);
  return 3.0 * 4.0 * double(m) / tt;
}

// A read-only stream: the sum of one 384 MiB array, best of 5. What a GEMV over weights does
// (decoding reads every weight once and writes almost nothing); on some machines well below the
// triad, which writes a third of its bytes. Each thread reads its share as kReadStreams
// interleaved streams, as the decoding GEMVs read several weight rows or panels at once: on some
// machines one stream per core gets far less (an AVX2 EPYC VM: 24.7 GB/s with one, 32.7 with 4).
constexpr int kReadStreams = 4;

double stream_read_bytes_per_s(bool stoppable) {
  const int64_t m = int64_t(96) << 20;
  std::vector<float> a(static_cast<size_t>(m), 1.f);
  std::vector<float> sums(size_t(std::max(1, threads())) * 16);  // one cache line per thread
  const double t = best_seconds(
      5,
      [&] {
        core::parallel_for(m, 1 << 16, [&](int64_t begin, int64_t end) {
          // 16 lanes of partial sums per stream: one vector add per 64 bytes, far faster than memory,
          // where a single sum would wait on each add's latency.
          const int64_t part = (end - begin) / kReadStreams / 16 * 16;
          float lanes[kReadStreams][16] = {};
          for (int64_t i = 0; i < part; i += 16)
            for (int s = 0; s < kReadStreams; ++s)
              for (int j = 0; j < 16; ++j) lanes[s][j] += a[size_t(begin + s * part + i + j)];
          float s = 0;
          for (int64_t i = begin + kReadStreams * part; i < end; ++i) s += a[size_t(i)];
          for (const auto& stream : lanes)
            for (float l : stream) s += l;
          sums[size_t(core::omp_thread_index()) * 16 % sums.size()] += s;  // kept, so the loop is not dropped
        });
      },
      stoppable);
  return 4.0 * double(m) / t;
}

MachineCeilings measure_once(const SystemInfo& sys) {
  MachineCeilings c;
  c.cpu = sys.cpu_model;
  c.threads = threads();
  const int64_t n = 1024;
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), out(size_t(n * n));
  const auto backend = cpu::default_gemm_backend();
  const double t32 = best_seconds(
      5, [&] { cpu::sgemm(backend, false, true, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, out.data(), n); }, true);
  c.gemm_f32_flops = 2.0 * double(n) * double(n) * double(n) / t32;
  std::string bf16_method = " (f32) / 3 (bf16)";
  if (cpu::onednn_bf16_supported()) {
    std::vector<uint16_t> a16(size_t(n * n), 0x3f00), b16(size_t(n * n), 0x3e80);
    const double t16 = best_seconds(
        3,
        [&] { cpu::gemm_bf16(backend, false, true, n, n, n, 1.f, a16.data(), n, b16.data(), n, 0.f, out.data(), n); },
        true);
    c.gemm_bf16_flops = 2.0 * double(n) * double(n) * double(n) / t16;
  } else {
    bf16_method = " (f32; bf16: none, no bf16 GEMM on this CPU)";  // gemm_bf16_flops stays 0
  }
  {
    // int8: the GEMM --dtype int8's linears run (cpu/int8_linear.h), codes in and int32 sums out.
    const Tensor w = Tensor::zeros({n, n}, DType::f32);
    const cpu::Int8Linear layer(w, Tensor(), cpu::FusedActivation::none, n);
    std::vector<int8_t> codes(size_t(n * n), 3);
    std::vector<int32_t> acc(size_t(n * n));
    const double t8 = best_seconds(
        5, [&] { layer.multiply_codes(codes.data(), n, acc.data(), n); }, true);
    c.gemm_int8_ops = 2.0 * double(n) * double(n) * double(n) / t8;
    bf16_method += "; int8: the same shape as --dtype int8 multiplies (s8 x s8 -> s32), best of 5";
  }
  c.memory_bytes_per_s = stream_triad_bytes_per_s(true);
  c.memory_read_bytes_per_s = stream_read_bytes_per_s(true);
  c.method = "GEMM: " + std::string(cpu::gemm_backend_name(backend)) + " 1024x1024x1024, best of 5" + bf16_method +
             "; memory: STREAM triad over 3 x 128 MiB, and a read-only sum over 384 MiB (4 streams per thread), best "
             "of 5 each; " +
             std::to_string(c.threads) + " threads";
  c.measured_at = core::utc_now_iso();
  return c;
}

}  // namespace

MachineCeilings as_machine_ceilings(const GpuCeilings& g, bool tf32) {
  MachineCeilings c;
  c.gemm_f32_flops = tf32 ? g.gemm_tf32_flops : g.gemm_f32_flops;
  c.gemm_bf16_flops = g.gemm_bf16_flops;
  c.gemm_f16_flops = g.gemm_f16_flops;
  c.memory_bytes_per_s = g.memory_bytes_per_s;
  c.cpu = g.name + " (" + g.device + ")";
  c.measured_at = g.measured_at;
  c.method = g.method + (tf32 ? "; f32 GEMMs judged against the TF32 ceiling (--allow-tf32)" : "");
  return c;
}

namespace {

std::string ceilings_key(const SystemInfo& sys) {
  return sys.cpu_model + "|" + std::to_string(sys.logical_cores) + "|" + std::to_string(threads());
}

fs::path ceilings_file(const std::string& key) {
  return cache_dir() / ("ceilings-" + std::to_string(std::hash<std::string>{}(key)) + ".json");
}

}  // namespace

std::string machine_ceilings_cache_file() { return ceilings_file(ceilings_key(system_info())).string(); }

std::optional<MachineCeilings> cached_machine_ceilings() {
  const std::string key = ceilings_key(system_info());
  const fs::path file = ceilings_file(key);
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(in);
    if (j.value("key", "") != key) return std::nullopt;
    MachineCeilings c;
    c.gemm_f32_flops = j.at("gemm_f32_flops");
    c.gemm_bf16_flops = j.at("gemm_bf16_flops");
    c.gemm_int8_ops = j.at("gemm_int8_ops");  // a cache from before int8 lacks it: measured again
    c.memory_bytes_per_s = j.at("memory_bytes_per_s");
    c.memory_read_bytes_per_s = j.at("memory_read_bytes_per_s");
    // A cache from before the read-only stream read several streams per thread lacks this: its
    // figure was one stream's, too low, so it is measured again.
    if (j.at("read_streams") != kReadStreams) return std::nullopt;
    c.threads = j.at("threads");
    c.cpu = j.at("cpu");
    c.measured_at = j.at("measured_at");
    c.method = j.at("method");
    // The load it was measured under: a cache that does not say, or says it was busy, is measured
    // again (one written before the load was recorded, or by a version that misread it).
    c.other_cores = j.at("other_cores");
    c.load_average = j.at("load_average");
    c.load_measured = true;
    if (c.other_cores > kMaxOtherCores) return std::nullopt;
    c.cache_file = file.string();
    c.from_cache = true;
    std::tm tm{};
    if (strptime(c.measured_at.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm))
      c.age_s = std::max(0.0, std::difftime(std::time(nullptr), timegm(&tm)));
    return c;
  } catch (const nlohmann::json::exception&) {  // a damaged cache is measured again
    return std::nullopt;
  }
}

namespace {

// What this process measured without caching it, per cache file (machine, threads and cache
// directory): a full measurement taken under load, and the memory bandwidth measured alone.
// Never written to disk, but measured once: a sweep's points, a training run's summary and each
// decoding point are judged against one figure, not one that moves with the load from point to
// point (nor measured again at each, seconds apiece).
struct ProcessMeasurements {
  std::mutex mutex;
  std::map<std::string, MachineCeilings> loaded;  // machine_ceilings under load
  std::map<std::string, MachineCeilings> memory;  // memory_bandwidth_ceiling without a cache
};

ProcessMeasurements& process_measurements() {
  static ProcessMeasurements m;
  return m;
}

}  // namespace

MachineCeilings memory_bandwidth_ceiling() {
  if (auto c = cached_machine_ceilings()) return *c;
  const std::string file = ceilings_file(ceilings_key(system_info())).string();
  ProcessMeasurements& measured = process_measurements();
  const std::lock_guard<std::mutex> lock(measured.mutex);
  if (auto it = measured.loaded.find(file); it != measured.loaded.end()) return it->second;
  if (auto it = measured.memory.find(file); it != measured.memory.end()) return it->second;
  MachineCeilings c;
  c.cpu = system_info().cpu_model;
  c.threads = threads();
  CpuLoadWindow window;                                    // the load it is measured under, said wherever the limit is
  c.memory_bytes_per_s = stream_triad_bytes_per_s(false);  // a second, within a point: stops after it
  c.memory_read_bytes_per_s = stream_read_bytes_per_s(false);
  const CpuLoad load = window.finish(c.threads);
  c.load_measured = load.measured;
  c.other_cores = load.other_cores_mean;
  c.load_average = load.load_average_1m;
  c.under_load = !load.measured || c.other_cores > kMaxOtherCores;
  c.method =
      "memory: STREAM triad over 3 x 128 MiB and a read-only sum over 384 MiB (4 streams per thread), best of 5 each, "
      "measured now (tach "
      "info --ceilings measures and caches every ceiling); " +
      std::to_string(c.threads) + " threads";
  c.measured_at = core::utc_now_iso();
  return measured.memory[file] = c;
}

MachineCeilings machine_ceilings(bool remeasure) {
  const SystemInfo sys = system_info();
  const std::string key = ceilings_key(sys);
  const fs::path file = ceilings_file(key);
  ProcessMeasurements& measured = process_measurements();
  const std::lock_guard<std::mutex> lock(measured.mutex);
  if (!remeasure) {
    if (auto c = cached_machine_ceilings()) return *c;
    if (auto it = measured.loaded.find(file.string()); it != measured.loaded.end()) return it->second;
  }
  MachineCeilings c = measure(sys);
  if (c.under_load) return measured.loaded[file.string()] = c;  // not cached: a later process measures again
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file);
  if (out) {
    out << nlohmann::json{{"key", key},
                          {"gemm_f32_flops", c.gemm_f32_flops},
                          {"gemm_bf16_flops", c.gemm_bf16_flops},
                          {"gemm_int8_ops", c.gemm_int8_ops},
                          {"memory_bytes_per_s", c.memory_bytes_per_s},
                          {"memory_read_bytes_per_s", c.memory_read_bytes_per_s},
                          {"read_streams", kReadStreams},
                          {"threads", c.threads},
                          {"cpu", c.cpu},
                          {"measured_at", c.measured_at},
                          {"method", c.method},
                          {"other_cores", c.other_cores},
                          {"load_average", c.load_average}}
               .dump(2);
    c.cache_file = file.string();
  }
  return c;
}

std::string describe_ceilings_provenance(const MachineCeilings& c) {
  char load[160];
  if (c.load_measured)
    std::snprintf(load, sizeof load, "other processes used %.2f cores during it, load average %.2f", c.other_cores,
                  c.load_average);
  else std::snprintf(load, sizeof load, "other processes' CPU use unknown");
  std::string age;
  if (c.from_cache) {
    const double h = c.age_s / 3600;
    char a[64];
    if (h < 1) std::snprintf(a, sizeof a, "%.0f minutes old", c.age_s / 60);
    else if (h < 48) std::snprintf(a, sizeof a, "%.1f hours old", h);
    else std::snprintf(a, sizeof a, "%.0f days old", h / 24);
    age = std::string(", ") + a;
  }
  std::string s = "measured " + c.measured_at + age + " (" + load + ")";
  if (c.under_load && !c.load_measured)
    s += "; WARNING: other processes' CPU use could not be read (no /proc/stat), so these may be too low and are not "
         "cached";
  else if (c.under_load)
    s += "; WARNING: measured under load (other processes above " + plain_number(kMaxOtherCores, 3) +
         " cores), so the ceilings are too low and not cached; measure again on a quiet machine (tach info --ceilings "
         "--remeasure)";
  else if (c.from_cache) s += "; cached in " + c.cache_file + " (--remeasure to measure again)";
  else if (!c.cache_file.empty()) s += "; now cached in " + c.cache_file;
  return s;
}

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute-bound";
    case Bound::memory: return "memory-bound";
    default: return "overhead-bound";
  }
}

double gemm_ceiling(const MachineCeilings& c, DType compute) {
  switch (compute) {
    case DType::bf16: return c.gemm_bf16_flops;
    case DType::f16: return c.gemm_f16_flops;
    case DType::i8: return c.gemm_int8_ops;
    default: return c.gemm_f32_flops;
  }
}

DType ceiling_dtype_of(const std::string& detail, bool on_gpu) {
  // "bf16" holds "f16": look for it first.
  if (detail.find("bf16") != std::string::npos) return DType::bf16;
  if (detail.find("f16") != std::string::npos) return DType::f16;
  // A GPU's int8 and nf4 are weight-only: bf16 activations, and a bf16 GEMM where more rows than
  // a GEMV's come (ops/linear_cuda.cc). The CPU's int8 is an s8 GEMM; its nf4 dequantizes to f32.
  if (detail.find("int8") != std::string::npos) return on_gpu ? DType::bf16 : DType::i8;
  if (detail.find("nf4") != std::string::npos) return on_gpu ? DType::bf16 : DType::f32;
  return DType::f32;
}

RooflineVerdict roofline(double flops, double bytes, double seconds, const MachineCeilings& c, DType compute,
                         double overhead_factor) {
  RooflineVerdict v;
  const double peak = gemm_ceiling(c, compute);
  const double t_compute = peak > 0 ? flops / peak : 0;
  const double t_memory = c.memory_bytes_per_s > 0 ? bytes / c.memory_bytes_per_s : 0;
  const double floor = std::max(t_compute, t_memory);
  v.intensity = bytes > 0 ? flops / bytes : 0;
  if (seconds <= 0) return v;
  v.achieved_fraction = floor / seconds;
  v.above_ceiling = v.achieved_fraction > kCeilingTolerance;
  if (floor <= 0 || seconds > overhead_factor * floor) v.bound = Bound::overhead;
  else v.bound = t_compute >= t_memory ? Bound::compute : Bound::memory;
  return v;
}

}  // namespace tach
