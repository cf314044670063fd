// Allocators behind the accounting in tach/memory.h. A device backend registers one.
#pragma once

#include <cstddef>

#include "tach/device.h"
#include "tach/memory.h"

namespace tach::core {

// Raw allocation for one device kind. Implementations do no accounting; allocate_bytes does.
// `index` is the device's index within its kind (always 0 on the CPU).
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(int index, size_t bytes) = 0;
  virtual void deallocate(int index, void* ptr, size_t bytes) = 0;
  // Bytes freed but kept for reuse, and giving them back to the system (the bytes released).
  virtual int64_t cached_bytes(int index) = 0;
  virtual int64_t release_cached(int index) = 0;
  // Copies bytes between host memory and this kind's device `index` (or within it), and waits
  // until the bytes have arrived, so the source may be reused at once.
  enum class Direction { to_host, from_host, within_device };
  virtual void copy(int index, void* dst, const void* src, size_t bytes, Direction direction) = 0;
  virtual void fill_zero(int index, void* dst, size_t bytes) = 0;
};

// Registers the allocator for a device kind (the CUDA backend calls this at start-up).
void register_allocator(DeviceKind kind, Allocator* allocator);

// Allocates and counts; throws tach::Error naming the device and size when it fails.
void* allocate_bytes(Device device, size_t bytes, MemoryCategory category);
void deallocate_bytes(Device device, void* ptr, size_t bytes, MemoryCategory category);

// Copies bytes from one device's memory to another's (either side may be the CPU; two
// different GPUs go through the host). Returns when the copy is complete.
void copy_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t bytes);
void zero_bytes(Device device, void* dst, size_t bytes);

// File-backed views are not allocations but still memory a run touches.
void account_mapped(Device device, int64_t delta_bytes);

// CPU alignment: enough for AVX-512 loads and for oneDNN's preferred alignment.
inline constexpr size_t kCpuAlignment = 64;

}  // namespace tach::core
