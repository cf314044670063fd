#include "cuda/scratch.h"

#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "core/allocator.h"
#include "cuda/stream.h"
#include "tach/error.h"

namespace tach::cuda {
namespace {

constexpr int kMaxDevices = 16;
constexpr int kUses = int(ScratchUse::count);

struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};

const char* use_name(ScratchUse use) {
  switch (use) {
    case ScratchUse::gemm_input: return "GEMM input";
    case ScratchUse::dequantized_weight: return "dequantized weight";
    default: return "attention partials";
  }
}

}  // namespace

void* scratch(int device, ScratchUse use, size_t bytes) {
  static std::mutex mutex;
  static Buffer buffers[kMaxDevices][kUses];
  tach::check(device >= 0 && device < kMaxDevices, "CUDA device index out of range");
  std::lock_guard<std::mutex> lock(mutex);
  Buffer& b = buffers[device][int(use)];
  if (bytes <= b.bytes) return b.ptr;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream(device), &capturing) == cudaSuccess && capturing != cudaStreamCaptureStatusNone)
    throw Error(std::string("the ") + use_name(use) + " buffer on cuda:" + std::to_string(device) + " must grow to " +
                std::to_string(bytes) + " bytes during a CUDA graph capture; run the work once before capturing it");
  // Half again what is asked, so that a few growing calls do not each reallocate.
  const size_t grown = bytes + bytes / 2;
  if (b.ptr) core::deallocate_bytes(Device::cuda(device), b.ptr, b.bytes, MemoryCategory::workspace);
  b.ptr = core::allocate_bytes(Device::cuda(device), grown, MemoryCategory::workspace);
  b.bytes = grown;
  return b.ptr;
}

}  // namespace tach::cuda
