// What an op's FLOP/s is judged against: the published peak of the GPU that deviceProperties
// names, or for CPU traces this machine's measured GEMM ceilings (tach info --ceilings).
#pragma once

#include <optional>
#include <string>

namespace tach::analyze {

struct PeakFlops {
  std::string device;                  // as the table names it
  double f32 = 0, tf32 = 0, bf16 = 0;  // FLOP/s, dense (no structured sparsity)
  std::string source;
};

// The peak of the GPU named (deviceProperties[].name, e.g. "NVIDIA H100 80GB HBM3"); nullopt for a
// name the table does not hold. Figures from NVIDIA's datasheets (dense tensor-core rates).
std::optional<PeakFlops> published_peak(const std::string& device_name);

// The precision an op's inputs say it ran at: "bf16", "f16", "f32", or "" when the types do not
// say (types: the trace's "Input type" as read, "[c10::BFloat16, c10::BFloat16]").
std::string gemm_precision(const std::string& types);

}  // namespace tach::analyze
