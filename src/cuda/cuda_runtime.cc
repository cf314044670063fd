// The CUDA backend's entry: device discovery and the device allocator. Kernels and cuBLASLt
// arrive with the CUDA issue; this file is the seam they plug into.
#include <cuda_runtime.h>

#include "core/allocator.h"
#include "tach/device.h"
#include "tach/error.h"

namespace tach {
namespace {

class CudaAllocator final : public core::Allocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error so later calls are not poisoned
      return nullptr;
    }
    return p;
  }
  void deallocate(void* ptr, size_t) override { cudaFree(ptr); }
};

// Registered on first use of any CUDA entry point, so that a CPU-only run never touches the driver.
bool register_once() {
  static CudaAllocator allocator;
  static const bool done = [] {
    core::register_allocator(DeviceKind::cuda, &allocator);
    return true;
  }();
  return done;
}

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (n > 0) register_once();
  return n;
}

bool cuda_available() { return cuda_device_count() > 0; }

std::vector<CudaDeviceInfo> cuda_devices() {
  std::vector<CudaDeviceInfo> out;
  const int n = cuda_device_count();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.sm_major = prop.major;
    info.sm_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.total_bytes = prop.totalGlobalMem;
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) info.free_bytes = free_b;
    out.push_back(info);
  }
  return out;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    // The runtime reports a missing driver as an "insufficient" one; say which it is.
    if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice)
      return std::string("no usable NVIDIA driver or GPU on this machine (CUDA runtime: ") + cudaGetErrorString(err) + ")";
    return std::string("CUDA runtime: ") + cudaGetErrorString(err);
  }
  return n == 0 ? "no CUDA device found" : "";
}

void synchronize(Device device) {
  if (device.kind != DeviceKind::cuda) return;
  if (cudaSetDevice(device.index) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
    throw Error("synchronize " + device.str() + ": " + cudaGetErrorString(cudaGetLastError()));
}

}  // namespace tach
