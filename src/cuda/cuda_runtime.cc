// The CUDA backend's entry: device discovery, the stream-ordered device allocator, copies and
// synchronisation. Kernels live beside their ops (src/ops/*_cuda.cu); cuBLASLt in cublaslt.cc.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/allocator.h"
#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "tach/device.h"
#include "tach/error.h"

namespace tach {
namespace {

// Device memory from each device's default memory pool, ordered on tach's stream
// (cudaMallocFromPoolAsync / cudaFreeAsync): a freed block is reused by the next allocation on
// the stream without a device-wide synchronisation, as PyTorch's caching allocator does. The
// pool's release threshold is raised to "keep everything", so a forward's buffers come back
// from the pool instead of from the driver every pass; what the pool holds beyond the bytes in
// use is reported as `cached` (and given back by release_cached_memory).
// Devices do not come and go while a process runs, so they are counted once.
int devices_present() {
  static const int n = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return count;
  }();
  return n;
}

void usable_or_throw(int index) {
  if (index >= 0 && index < devices_present()) return;
  const std::string device = "cuda:" + std::to_string(index);
  if (devices_present() == 0) throw Error(device + ": " + cuda_unavailable_reason());
  throw Error(device + ": this machine has " + std::to_string(devices_present()) + " CUDA device(s), numbered from 0");
}

class CudaAllocator final : public core::Allocator {
 public:
  void* allocate(int index, size_t bytes) override {
    usable_or_throw(index);
    cudaStream_t s = cuda::stream(index);
    void* p = nullptr;
    if (cudaMallocFromPoolAsync(&p, bytes == 0 ? 1 : bytes, pool(index), s) != cudaSuccess) {
      cudaGetLastError();
      // Out of memory with blocks cached: give them back and try once more.
      cudaStreamSynchronize(s);
      cudaMemPoolTrimTo(pool(index), 0);
      if (cudaMallocFromPoolAsync(&p, bytes == 0 ? 1 : bytes, pool(index), s) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
      }
    }
    in_use_[index] += int64_t(bytes == 0 ? 1 : bytes);
    return p;
  }
  void deallocate(int index, void* ptr, size_t bytes) override {
    in_use_[index] -= int64_t(bytes == 0 ? 1 : bytes);
    // Errors are swallowed: this runs from destructors, possibly while the runtime shuts down.
    try {
      if (cudaFreeAsync(ptr, cuda::stream(index)) != cudaSuccess) cudaGetLastError();
    } catch (...) {}
  }
  int64_t cached_bytes(int index) override {
    uint64_t reserved = 0;
    if (cudaMemPoolGetAttribute(pool(index), cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    const int64_t cached = int64_t(reserved) - in_use_[index];
    return cached > 0 ? cached : 0;
  }
  int64_t release_cached(int index) override {
    const int64_t before = cached_bytes(index);
    cuda::check(cudaStreamSynchronize(cuda::stream(index)), "cudaStreamSynchronize");
    cuda::check(cudaMemPoolTrimTo(pool(index), 0), "cudaMemPoolTrimTo");
    return before - cached_bytes(index);
  }
  void copy(int index, void* dst, const void* src, size_t bytes, Direction direction) override {
    const cudaMemcpyKind kind = direction == Direction::to_host     ? cudaMemcpyDeviceToHost
                                : direction == Direction::from_host ? cudaMemcpyHostToDevice
                                                                    : cudaMemcpyDeviceToDevice;
    cudaStream_t s = cuda::stream(index);
    cuda::check(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
    // Pageable host memory: the call returns once the source is staged, but callers expect the
    // destination to be complete (a host buffer read next, or a source freed next).
    cuda::check(cudaStreamSynchronize(s), "cudaMemcpyAsync (synchronise)");
  }
  void fill_zero(int index, void* dst, size_t bytes) override {
    cuda::check(cudaMemsetAsync(dst, 0, bytes, cuda::stream(index)), "cudaMemsetAsync");
  }

 private:
  static constexpr int kMaxDevices = 16;
  cudaMemPool_t pool(int index) {
    std::call_once(pool_once_[index], [&] {
      cuda::check(cudaDeviceGetDefaultMemPool(&pools_[index], index), "cudaDeviceGetDefaultMemPool");
      uint64_t keep_all = UINT64_MAX;
      cuda::check(cudaMemPoolSetAttribute(pools_[index], cudaMemPoolAttrReleaseThreshold, &keep_all),
                  "cudaMemPoolSetAttribute(release threshold)");
    });
    return pools_[index];
  }
  std::once_flag pool_once_[kMaxDevices];
  cudaMemPool_t pools_[kMaxDevices] = {};
  std::atomic<int64_t> in_use_[kMaxDevices] = {};
};

// Registering only stores a pointer (the driver is first touched by the first allocation), so it
// happens at start-up: a device tensor never meets the "no CUDA backend" message in a CUDA build.
bool register_once() {
  static CudaAllocator* allocator = new CudaAllocator();  // never destroyed: static tensors free late
  static const bool done = [] {
    core::register_allocator(DeviceKind::cuda, allocator);
    return true;
  }();
  return done;
}

const bool registered_at_startup = register_once();

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
    info.pci_domain = prop.pciDomainID, info.pci_bus = prop.pciBusID, info.pci_device = prop.pciDeviceID;
    size_t free_b = 0, total_b = 0;
    cuda::DeviceGuard guard(i);
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) info.free_bytes = free_b;
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
      return std::string("no usable NVIDIA driver or GPU on this machine (CUDA runtime: ") + cudaGetErrorString(err) +
             ")";
    return std::string("CUDA runtime: ") + cudaGetErrorString(err);
  }
  return n == 0 ? "no CUDA device found" : "";
}

struct DeviceTimer::Impl {
  Impl(int device) : start(device), stop(device) {}
  cuda::Event start, stop;
};

DeviceTimer::DeviceTimer(Device device) {
  if (device.kind == DeviceKind::cuda) impl_ = std::make_unique<Impl>(device.index);
}
DeviceTimer::~DeviceTimer() = default;
void DeviceTimer::start() {
  if (impl_) impl_->start.record();
}
void DeviceTimer::stop() {
  if (impl_) impl_->stop.record();
}
double DeviceTimer::elapsed_ms() const {
  return impl_ ? double(cuda::Event::elapsed_ms(impl_->start, impl_->stop)) : -1.0;
}

void synchronize(Device device) {
  if (device.kind != DeviceKind::cuda) return;
  check(device.index >= 0 && device.index < cuda_device_count(),
        "synchronize " + device.str() + ": " + (cuda_available() ? "no such device" : cuda_unavailable_reason()));
  const cudaError_t err = cudaStreamSynchronize(cuda::stream(device.index));
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw Error("synchronize " + device.str() + ": " + cudaGetErrorString(err));
  }
}

}  // namespace tach
