// This machine's limits for the findings' verdicts: what each device can compute and hold.
#include <map>
#include <mutex>

#include "tach/device.h"
#include "tach/error.h"
#include "tach/profile.h"
#include "tach/report.h"
#include "tach/system_info.h"

namespace tach {

namespace {

DeviceLimits cpu_limits() {
  DeviceLimits d;
  d.memory_bytes = double(system_info().memory_total_bytes);
  // The cache only: measuring takes seconds on a quiet machine, which a summary cannot promise.
  const std::optional<MachineCeilings> c = cached_machine_ceilings();
  if (!c) {
    d.source = "none cached for this machine and thread count: tach info --ceilings measures them";
    return d;
  }
  d.gemm_f32_flops = c->gemm_f32_flops;
  d.gemm_bf16_flops = c->gemm_bf16_flops;
  d.gemm_int8_ops = c->gemm_int8_ops;
  d.source = "tach info --ceilings, measured " + c->measured_at;
  return d;
}

DeviceLimits gpu_limits(const Device& device) {
  DeviceLimits d;
  for (const CudaDeviceInfo& info : cuda_devices())
    if (info.index == device.index) d.memory_bytes = double(info.total_bytes);
  try {
    const GpuCeilings g = measure_gpu_ceilings(device);
    d.gemm_f32_flops = g.gemm_f32_flops;
    d.gemm_tf32_flops = g.gemm_tf32_flops;
    d.gemm_bf16_flops = g.gemm_bf16_flops;
    d.gemm_f16_flops = g.gemm_f16_flops;
    d.source = "cuBLASLt GEMMs measured now on " + g.name;
  } catch (const Error& e) { d.source = std::string("not measurable here: ") + e.what(); }
  return d;
}

}  // namespace

DeviceLimits this_machine_limits(const std::string& device) {
  static std::mutex mu;
  static std::map<std::string, DeviceLimits> known;  // a GPU's ceilings take seconds: once per process
  std::lock_guard<std::mutex> lock(mu);
  if (const auto it = known.find(device); it != known.end()) return it->second;
  DeviceLimits d;
  try {
    const Device dev = parse_device(device);
    d = dev.kind == DeviceKind::cuda ? gpu_limits(dev) : cpu_limits();
  } catch (const Error& e) { d.source = std::string("unknown device: ") + e.what(); }
  return known[device] = d;
}

}  // namespace tach
