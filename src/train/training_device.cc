// Where a training step runs, from --device: the one rule tach train and tach profile share (tach
// bench resolves its device axis the same way), so that each says the same thing on one machine.
#include <string>

#include "tach/error.h"
#include "tach/train.h"

namespace tach {

Device training_device(const std::string& spec, std::string* why) {
  if (spec == "auto") {
    if (cuda_available()) {
      const std::vector<CudaDeviceInfo> gpus = cuda_devices();
      if (why)
        *why =
            "device auto: cuda:0 (" + (gpus.empty() ? std::string("a CUDA device") : gpus.front().name) + " is usable)";
      return Device::cuda(0);
    }
    if (why) *why = "device auto: cpu (no usable GPU: " + cuda_unavailable_reason() + ")";
    return Device::cpu();
  }
  const Device d = parse_device(spec);  // names what is wrong with "tpu" or "cuda:x"
  if (why) why->clear();
  if (d.kind == DeviceKind::cpu) return d;
  check(cuda_available(), "--device " + spec + ": no CUDA device here (" + cuda_unavailable_reason() +
                              "); run with --device cpu, or auto (a GPU when there is one, else the CPU)");
  check(d.index < cuda_device_count(), "--device " + spec + ": there is no CUDA device " + std::to_string(d.index) +
                                           " (this machine has " + std::to_string(cuda_device_count()) + ")");
  return d;
}

}  // namespace tach
