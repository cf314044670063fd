// Compiled when TACH_CUDA is OFF: the CUDA entry points answer honestly that there is none.
#include "core/stream_graph.h"
#include "tach/device.h"
#include "tach/error.h"
#include "tach/profile.h"

namespace tach {

bool cuda_available() { return false; }
int cuda_device_count() { return 0; }
std::vector<CudaDeviceInfo> cuda_devices() { return {}; }
void synchronize(Device device) {
  if (device.kind == DeviceKind::cuda) throw Error("synchronize " + device.str() + ": " + cuda_unavailable_reason());
}
struct DeviceTimer::Impl {};
DeviceTimer::DeviceTimer(Device device) {
  if (device.kind == DeviceKind::cuda) throw Error("DeviceTimer on " + device.str() + ": " + cuda_unavailable_reason());
}
DeviceTimer::~DeviceTimer() = default;
void DeviceTimer::start() {}
void DeviceTimer::stop() {}
double DeviceTimer::elapsed_ms() const { return -1; }

GpuCeilings measure_gpu_ceilings(Device device) {
  throw Error("GPU ceilings on " + device.str() + ": " + cuda_unavailable_reason());
}

namespace core {
struct StreamGraph::Impl {};
bool StreamGraph::supported(Device) { return false; }
StreamGraph::StreamGraph(Device device, const std::function<void()>&) {
  throw Error("a graph of " + device.str() + "'s work: " + cuda_unavailable_reason());
}
StreamGraph::~StreamGraph() = default;
void StreamGraph::replay() const {}
int64_t StreamGraph::nodes() const { return 0; }
}  // namespace core

std::string cuda_unavailable_reason() {
  return "this build of tach has no CUDA backend (configure with -DTACH_CUDA=ON)";
}

}  // namespace tach
