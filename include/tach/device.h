// Where a tensor lives and where an op runs. The CUDA backend (src/cuda/) plugs in here.
#pragma once

#include <string>
#include <vector>

namespace tach {

enum class DeviceKind : unsigned char { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"
};

// Waits until the device has finished the work queued on it (a no-op on the CPU), so that a
// clock read afterwards times the work, not its launch.
void synchronize(Device device);

// Parses "cpu", "cuda", "cuda:N"; throws tach::Error on anything else.
Device parse_device(const std::string& text);

// True when this build has the CUDA backend and the driver reports at least one device.
bool cuda_available();
int cuda_device_count();

}  // namespace tach

namespace tach {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  size_t total_bytes = 0, free_bytes = 0;
  int multiprocessors = 0;
};
// Empty without the CUDA backend or without a usable driver.
std::vector<CudaDeviceInfo> cuda_devices();
// Why CUDA is unusable, for messages ("this build has no CUDA backend", "no CUDA driver").
std::string cuda_unavailable_reason();

}  // namespace tach
