// tach info: the machine, as tach sees it, and anything about it that would skew numbers.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "tach/system_info.h"

namespace tach::cli {

namespace {
struct InfoOptions {
  bool json = false;
};

int run_info(const InfoOptions& opt) {
  const SystemInfo s = system_info();
  if (opt.json) {
    nlohmann::json j;
    j["cpu_model"] = s.cpu_model;
    j["logical_cores"] = s.logical_cores;
    j["threads"] = s.threads;
    j["isa"] = s.isa.summary();
    j["memory_total_bytes"] = s.memory_total_bytes;
    j["memory_available_bytes"] = s.memory_available_bytes;
    j["gemm_library"] = s.gemm_library;
    j["onednn_version"] = s.onednn_version;
    j["openblas"] = {{"config", s.openblas_config}, {"core", s.openblas_core}, {"threads", s.openblas_threads}};
    j["warnings"] = s.warnings;
    j["cuda_devices"] = nlohmann::json::array();
    for (const auto& d : s.cuda)
      j["cuda_devices"].push_back({{"index", d.index},
                                   {"name", d.name},
                                   {"compute_capability", std::to_string(d.sm_major) + "." + std::to_string(d.sm_minor)},
                                   {"multiprocessors", d.multiprocessors},
                                   {"total_bytes", d.total_bytes},
                                   {"free_bytes", d.free_bytes}});
    if (s.cuda.empty()) j["cuda_note"] = s.cuda_note;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "cpu        " << s.cpu_model << "\n"
            << "cores      " << s.logical_cores << " logical, tach uses " << s.threads << " threads\n"
            << "isa        " << s.isa.summary() << "\n"
            << "memory     " << human_bytes(double(s.memory_total_bytes)) << " total, "
            << human_bytes(double(s.memory_available_bytes)) << " available\n"
            << "gemm       " << s.gemm_library << " (oneDNN " << s.onednn_version << ")\n"
            << "openblas   " << s.openblas_config << "; kernels for '" << s.openblas_core << "', " << s.openblas_threads
            << " threads\n";
  if (s.isa.avx512f && !s.isa.avx512_bf16)
    std::cout << "bf16       no avx512_bf16 on this CPU: bf16 GEMMs are emulated and slower than f32\n";
  if (s.cuda.empty()) {
    std::cout << "cuda       none (" << s.cuda_note << ")\n";
  } else {
    for (const auto& d : s.cuda)
      std::cout << "cuda:" << d.index << "     " << d.name << ", sm_" << d.sm_major << d.sm_minor << ", "
                << d.multiprocessors << " SMs, " << human_bytes(double(d.total_bytes)) << " ("
                << human_bytes(double(d.free_bytes)) << " free)\n";
  }
  for (const auto& w : s.warnings) std::cout << "WARNING    " << w << "\n";
  return 0;
}
}  // namespace

Command add_info_command(CLI::App& app) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* sub = app.add_subcommand("info", "Show the CPU, ISA, memory, GEMM libraries and CUDA devices; warn about "
                                             "settings that skew measurements");
  sub->add_flag("--json", opt->json, "Print machine-readable JSON");
  return {sub, [opt] { return run_info(*opt); }};
}

}  // namespace tach::cli
