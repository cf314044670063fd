// CPU identification through cpuid and procfs, and the OpenBLAS core-detection trap: Debian's
// OpenBLAS 0.3.21 does not know some newer AVX-512 cores and silently falls back to SSE3
// kernels, 7x slower. We compare what the CPU has with what OpenBLAS picked.
#include <cpuid.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "tach/system_info.h"

extern "C" {
char* openblas_get_config(void);
char* openblas_get_corename(void);
int openblas_get_num_threads(void);
}

namespace tach {

namespace {
bool bit(unsigned reg, int b) { return (reg >> b) & 1u; }

std::string read_cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  }
  return "unknown";
}

long long read_meminfo_kib(const std::string& key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  long long v = 0;
  std::string unit;
  while (f >> k >> v >> unit) {
    if (k == key + ":") return v;
  }
  return 0;
}
}  // namespace

namespace {

// The extensions cpuid reports, whatever DNNL_MAX_CPU_ISA says.
CpuIsa cpuid_isa() {
  CpuIsa isa;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    isa.fma = bit(c, 12);
    isa.f16c = bit(c, 29);
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    isa.avx2 = bit(b, 5);
    isa.avx512f = bit(b, 16);
    isa.avx512bw = bit(b, 30);
    isa.avx512vl = bit(b, 31);
    isa.avx512_vnni = bit(c, 11);
    isa.amx_bf16 = bit(d, 22);
    isa.amx_tile = bit(d, 24);
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) isa.avx512_bf16 = bit(a, 5);
  return isa;
}

const char* max_cpu_isa() {
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  return cap != nullptr && *cap != '\0' ? cap : nullptr;
}

}  // namespace

// DNNL_MAX_CPU_ISA (AVX2, AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX) is
// oneDNN's cap, and tach's too: the extensions above it read as absent here, so that every choice
// that follows the ISA (int8's weight range, bf16 in hardware or emulated, the f32 panels, the
// notes and the advice) agrees with the kernels oneDNN runs, and one variable takes each ISA path
// this CPU includes (tests/cmake/isa_paths.cmake runs the suite's CPU-dependent tests on each).
// tach's own kernels are compiled for the build machine (-march=native) and are not capped.
CpuIsa detect_isa() {
  CpuIsa isa = cpuid_isa();
  if (max_cpu_isa() == nullptr) return isa;
  // oneDNN's ISA values are bit sets: an ISA includes every bit of the ones below it.
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto has = [&](dnnl::cpu_isa wanted) {
    const auto w = static_cast<unsigned>(wanted);
    return (effective & w) == w;
  };
  if (!has(dnnl::cpu_isa::avx2)) isa.avx2 = isa.fma = false;
  if (!has(dnnl::cpu_isa::avx512_core)) isa.avx512f = isa.avx512bw = isa.avx512vl = false;
  if (!has(dnnl::cpu_isa::avx512_core_vnni)) isa.avx512_vnni = false;
  if (!has(dnnl::cpu_isa::avx512_core_bf16)) isa.avx512_bf16 = false;
  if (!has(dnnl::cpu_isa::avx512_core_amx)) isa.amx_tile = isa.amx_bf16 = false;
  return isa;
}

std::string CpuIsa::summary() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(amx_tile, "amx_tile");
  add(amx_bf16, "amx_bf16");
  return s.empty() ? "none of the tracked extensions" : s;
}

SystemInfo system_info() {
  SystemInfo info;
  info.cpu_model = read_cpu_model();
  info.logical_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  info.threads = core::num_threads();
  info.isa = detect_isa();
  info.memory_total_bytes = read_meminfo_kib("MemTotal") * 1024;
  info.memory_available_bytes = read_meminfo_kib("MemAvailable") * 1024;
  info.gemm_library = std::string(cpu::gemm_backend_name(cpu::default_gemm_backend()));
  info.onednn_version = cpu::onednn_version();
  info.openblas_config = openblas_get_config();
  info.openblas_core = openblas_get_corename();
  info.openblas_threads = openblas_get_num_threads();

  if (const char* cap = max_cpu_isa(); cap != nullptr && info.isa.summary() != cpuid_isa().summary())
    info.warnings.push_back(std::string("DNNL_MAX_CPU_ISA=") + cap + ": oneDNN and tach run as on a CPU with " +
                            info.isa.summary() + " (this one has " + cpuid_isa().summary() +
                            "); tach's own kernels, compiled for this CPU, still use its vector width.");

  const std::string core = info.openblas_core;
  const bool generic_core = core == "Prescott" || core == "Core2" || core == "Nehalem" || core == "Sandybridge" ||
                            core == "Penryn" || core == "Dunnington" || core == "Atom";
  if (info.isa.avx512f && generic_core) {
    info.warnings.push_back("OpenBLAS picked the '" + core +
                            "' kernels on a CPU with AVX-512: it does not recognise this core and runs several "
                            "times slower than it can. Set OPENBLAS_CORETYPE=SKYLAKEX (or COOPERLAKE with "
                            "avx512_bf16) before running. tach's own GEMM uses oneDNN and is not affected.");
  } else if (info.isa.avx512f && (core == "Haswell" || core == "Zen")) {
    info.warnings.push_back("OpenBLAS picked its AVX2 '" + core +
                            "' kernels on a CPU with AVX-512; set OPENBLAS_CORETYPE=SKYLAKEX for its AVX-512 kernels.");
  } else if (info.isa.avx2 && generic_core) {
    info.warnings.push_back("OpenBLAS picked the '" + core +
                            "' kernels on a CPU with AVX2: set OPENBLAS_CORETYPE=HASWELL to use them.");
  }
  if (!cpu::onednn_bf16_supported())
    info.warnings.push_back("oneDNN " + info.onednn_version +
                            " has no bf16 GEMM for this CPU (it needs AVX-512): inference in bf16 stores the weights "
                            "in bf16 and computes in f32; bf16 training is emulated.");
  info.cuda = cuda_devices();
  if (info.cuda.empty()) info.cuda_note = cuda_unavailable_reason();
  return info;
}

}  // namespace tach
