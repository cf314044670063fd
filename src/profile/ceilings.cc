// Machine ceilings for the roofline: peak GEMM throughput per dtype through the GEMM library
// tach uses, and memory bandwidth from a STREAM triad. Measured once per machine and cached in
// $XDG_CACHE_HOME/tach (or ~/.cache/tach), keyed by CPU model, cores and threads.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/system_info.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

double best_seconds(int reps, const std::function<void()>& fn) {
  fn();  // warm-up: primitive creation, page faults
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
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

MachineCeilings measure(const SystemInfo& sys) {
  MachineCeilings c;
  c.cpu = sys.cpu_model;
  c.threads = threads();
  const int64_t n = 1024;
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), out(size_t(n * n));
  const auto backend = cpu::default_gemm_backend();
  const double t32 = best_seconds(5, [&] {
    cpu::sgemm(backend, false, true, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, out.data(), n);
  });
  c.gemm_f32_flops = 2.0 * double(n) * double(n) * double(n) / t32;
  std::vector<uint16_t> a16(size_t(n * n), 0x3f00), b16(size_t(n * n), 0x3e80);
  const double t16 = best_seconds(3, [&] {
    cpu::gemm_bf16(backend, false, true, n, n, n, 1.f, a16.data(), n, b16.data(), n, 0.f, out.data(), n);
  });
  c.gemm_bf16_flops = 2.0 * double(n) * double(n) * double(n) / t16;
  // STREAM triad a = b + s*c over 3 arrays of 32 Mi floats (384 MiB), far past any cache.
  const int64_t m = int64_t(32) << 20;
  std::vector<float> x(static_cast<size_t>(m)), y(static_cast<size_t>(m), 1.f), z(static_cast<size_t>(m), 2.f);
  const double tt = best_seconds(5, [&] {
    core::parallel_for(m, 1 << 16, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) x[size_t(i)] = y[size_t(i)] + 3.f * z[size_t(i)];
    });
  });
  c.memory_bytes_per_s = 3.0 * 4.0 * double(m) / tt;
  c.method = "GEMM: " + std::string(cpu::gemm_backend_name(backend)) +
             " 1024x1024x1024, best of 5 (f32) / 3 (bf16); memory: STREAM triad over 3 x 128 MiB, best of 5; " +
             std::to_string(c.threads) + " threads";
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  c.measured_at = buf;
  return c;
}

}  // namespace

MachineCeilings machine_ceilings(bool remeasure) {
  const SystemInfo sys = system_info();
  const std::string key = sys.cpu_model + "|" + std::to_string(sys.logical_cores) + "|" + std::to_string(threads());
  const fs::path file = cache_dir() / ("ceilings-" + std::to_string(std::hash<std::string>{}(key)) + ".json");
  if (!remeasure) {
    std::ifstream in(file);
    if (in) {
      try {
        const auto j = nlohmann::json::parse(in);
        if (j.value("key", "") == key) {
          MachineCeilings c;
          c.gemm_f32_flops = j.at("gemm_f32_flops");
          c.gemm_bf16_flops = j.at("gemm_bf16_flops");
          c.memory_bytes_per_s = j.at("memory_bytes_per_s");
          c.threads = j.at("threads");
          c.cpu = j.at("cpu");
          c.measured_at = j.at("measured_at");
          c.method = j.at("method");
          c.cache_file = file.string();
          return c;
        }
      } catch (const nlohmann::json::exception&) {  // a damaged cache is measured again
      }
    }
  }
  MachineCeilings c = measure(sys);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file);
  if (out) {
    out << nlohmann::json{{"key", key},
                          {"gemm_f32_flops", c.gemm_f32_flops},
                          {"gemm_bf16_flops", c.gemm_bf16_flops},
                          {"memory_bytes_per_s", c.memory_bytes_per_s},
                          {"threads", c.threads},
                          {"cpu", c.cpu},
                          {"measured_at", c.measured_at},
                          {"method", c.method}}
               .dump(2);
    c.cache_file = file.string();
  }
  return c;
}

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute-bound";
    case Bound::memory: return "memory-bound";
    default: return "overhead-bound";
  }
}

RooflineVerdict roofline(double flops, double bytes, double seconds, const MachineCeilings& c, bool bf16,
                         double overhead_factor) {
  RooflineVerdict v;
  const double peak = bf16 ? c.gemm_bf16_flops : c.gemm_f32_flops;
  const double t_compute = peak > 0 ? flops / peak : 0;
  const double t_memory = c.memory_bytes_per_s > 0 ? bytes / c.memory_bytes_per_s : 0;
  const double floor = std::max(t_compute, t_memory);
  v.intensity = bytes > 0 ? flops / bytes : 0;
  if (seconds <= 0) return v;
  v.achieved_fraction = floor / seconds;
  if (floor <= 0 || seconds > overhead_factor * floor)
    v.bound = Bound::overhead;
  else
    v.bound = t_compute >= t_memory ? Bound::compute : Bound::memory;
  return v;
}

}  // namespace tach
