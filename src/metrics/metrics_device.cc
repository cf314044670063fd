// Which device the metrics classes (Timer, MemoryProfiler, ComprehensiveProfiler) measure: a
// usable GPU by default, else the CPU; a named device that cannot be used is refused up front.
#include "tach/error.h"
#include "tach/metrics.h"

namespace tach {

Device default_metrics_device(std::string* why) {
  if (cuda_available() && cuda_device_count() > 0) {
    if (why) *why = "cuda:0: a usable GPU (memory is the device's in use; device=\"cpu\" measures the process's RSS)";
    return Device::cuda(0);
  }
  if (why) *why = "cpu: no usable GPU (" + cuda_unavailable_reason() + "); memory is the process's RSS";
  return Device::cpu();
}

Device usable_metrics_device(Device requested, const std::string& who) {
  if (requested.kind != DeviceKind::cuda) return requested;
  const int count = cuda_available() ? cuda_device_count() : 0;
  if (count == 0)
    throw Error(who + ": device " + requested.str() + " cannot be used: " + cuda_unavailable_reason() +
                "; pass device=\"cpu\", or leave the device out (the GPU where one is usable, else the CPU)");
  check(requested.index >= 0 && requested.index < count,
        who + ": device " + requested.str() + " is not there: this machine has " + std::to_string(count) +
            " CUDA device" + (count == 1 ? "" : "s") + " (cuda:0" +
            (count > 1 ? " to cuda:" + std::to_string(count - 1) : "") + ")");
  return requested;
}

}  // namespace tach
