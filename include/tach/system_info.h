// What tach runs on: CPU, ISA, memory, the GEMM libraries and their threads, CUDA devices.
// `tach info` prints this; results files embed it so that a number always names its machine.
#pragma once

#include <string>
#include <vector>

#include "tach/device.h"

namespace tach {

struct CpuIsa {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512_vnni = false, avx512_bf16 = false;
  bool amx_tile = false, amx_bf16 = false;
  std::string summary() const;  // "avx2 fma f16c avx512f ... "
};

struct SystemInfo {
  std::string cpu_model;
  int logical_cores = 0;
  int threads = 0;  // threads tach's pool uses
  CpuIsa isa;
  long long memory_total_bytes = 0;
  long long memory_available_bytes = 0;
  std::string gemm_library;  // the library the engine uses for GEMM
  std::string onednn_version;
  std::string openblas_config;  // openblas_get_config()
  std::string openblas_core;    // the kernel set OpenBLAS picked
  int openblas_threads = 0;
  std::vector<std::string> warnings;  // things that make numbers wrong or slow (see openblas check)
  std::vector<CudaDeviceInfo> cuda;
  std::string cuda_note;  // why there is no CUDA device, when there is none
};

SystemInfo system_info();
CpuIsa detect_isa();

// "0.1.0 (commit 0123abcd4567 at configure time)": what reports print as tach's version.
std::string tach_version();

}  // namespace tach
