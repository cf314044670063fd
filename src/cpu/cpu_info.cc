// CPU identification through cpuid and procfs, and the OpenBLAS core-detection trap: Debian's
// OpenBLAS 0.3.21 does not know some newer AVX-512 cores and silently falls back to SSE3
// kernels, 7x slower. We compare what the CPU has with what OpenBLAS picked.
#include <cpuid.h>
#include <unistd.h>

#include <fstream>
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

CpuIsa detect_isa() {
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
