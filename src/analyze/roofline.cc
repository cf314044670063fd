#include "analyze/roofline.h"

namespace tach::analyze {

std::optional<PeakFlops> published_peak(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  // {device, FP32, TF32, BF16} in TFLOP/s, dense.
  if (has("H200")) return PeakFlops{"H200 SXM", 67e12, 494.7e12, 989.4e12, "NVIDIA H200 datasheet (dense)"};
  if (has("H100") && (has("PCIe") || has("PCIE")))
    return PeakFlops{"H100 PCIe", 51e12, 378e12, 756e12, "NVIDIA H100 datasheet (dense)"};
  if (has("H100") && has("NVL"))
    return PeakFlops{"H100 NVL", 60e12, 417.5e12, 835.5e12, "NVIDIA H100 datasheet (dense)"};
  if (has("H100")) return PeakFlops{"H100 SXM", 67e12, 494.7e12, 989.4e12, "NVIDIA H100 datasheet (dense)"};
  if (has("A100")) return PeakFlops{"A100", 19.5e12, 156e12, 312e12, "NVIDIA A100 datasheet (dense)"};
  if (has("L40S")) return PeakFlops{"L40S", 91.6e12, 183e12, 362.05e12, "NVIDIA L40S datasheet (dense)"};
  if (has("L4")) return PeakFlops{"L4", 30.3e12, 60e12, 121e12, "NVIDIA L4 datasheet (dense)"};
  if (has("A10") && !has("A100")) return PeakFlops{"A10", 31.2e12, 62.5e12, 125e12, "NVIDIA A10 datasheet (dense)"};
  return std::nullopt;
}

std::string gemm_precision(const std::string& types) {
  if (types.find("BFloat16") != std::string::npos) return "bf16";
  if (types.find("Half") != std::string::npos) return "f16";
  if (types.find("float") != std::string::npos) return "f32";
  return "";
}

}  // namespace tach::analyze
