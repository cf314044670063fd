#include "cuda/stream.h"

#include <mutex>

#include "cuda/cuda_error.h"
#include "tach/error.h"

namespace tach::cuda {
namespace {
constexpr int kMaxDevices = 16;
}

cudaStream_t stream(int device) {
  static std::once_flag once[kMaxDevices];
  static cudaStream_t streams[kMaxDevices] = {};
  tach::check(device >= 0 && device < kMaxDevices, "CUDA device index " + std::to_string(device) + " is out of range");
  check(cudaSetDevice(device), "cudaSetDevice");
  std::call_once(once[device], [&] {
    cuda::check(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking), "cudaStreamCreate");
  });
  return streams[device];
}

int multiprocessors(int device) {
  static std::once_flag once[kMaxDevices];
  static int counts[kMaxDevices] = {};
  tach::check(device >= 0 && device < kMaxDevices, "CUDA device index " + std::to_string(device) + " is out of range");
  std::call_once(once[device], [&] {
    if (cudaDeviceGetAttribute(&counts[device], cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        counts[device] < 1) {
      cudaGetLastError();
      counts[device] = 1;
    }
  });
  return counts[device];
}

DeviceGuard::DeviceGuard(int device) {
  cuda::check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (previous_ != device) cuda::check(cudaSetDevice(device), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

Event::Event(int device) : device_(device) {
  DeviceGuard guard(device_);
  cuda::check(cudaEventCreate(&event_), "cudaEventCreate");
}

Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}

void Event::record() { cuda::check(cudaEventRecord(event_, stream(device_)), "cudaEventRecord"); }

void Event::wait() const { cuda::check(cudaEventSynchronize(event_), "cudaEventSynchronize"); }

float Event::elapsed_ms(const Event& start, const Event& end) {
  end.wait();
  float ms = 0;
  cuda::check(cudaEventElapsedTime(&ms, start.event_, end.event_), "cudaEventElapsedTime");
  return ms;
}

}  // namespace tach::cuda
