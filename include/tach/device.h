// Where a tensor lives and where an op runs. The CUDA backend (src/cuda/) plugs in here.
#pragma once

#include <memory>
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

// GPU time between two points of the work tach queues on a device: CUDA events recorded on tach's
// stream (resolution about 0.5 us). It counts what the GPU was given between the two records,
// including the gaps where it waited for the host to launch more; on the CPU there is no
// separate device clock and elapsed_ms() is -1.
class DeviceTimer {
 public:
  explicit DeviceTimer(Device device);
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;
  void start();
  void stop();
  double elapsed_ms() const;  // waits for the stop event

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tach

namespace tach {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  size_t total_bytes = 0, free_bytes = 0;
  int multiprocessors = 0;
  int pci_domain = -1, pci_bus = -1, pci_device = -1;  // to find the same GPU in NVML
};
// Empty without the CUDA backend or without a usable driver.
std::vector<CudaDeviceInfo> cuda_devices();
// Why CUDA is unusable, for messages ("this build has no CUDA backend", "no CUDA driver").
std::string cuda_unavailable_reason();

}  // namespace tach
