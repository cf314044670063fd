// Allocators behind the accounting in tach/memory.h. A device backend registers one.
#pragma once

#include <cstddef>

#include "tach/device.h"
#include "tach/memory.h"

namespace tach::core {

// Raw allocation for one device kind. Implementations do no accounting; allocate_bytes does.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;
};

// Registers the allocator for a device kind (the CUDA backend calls this at start-up).
void register_allocator(DeviceKind kind, Allocator* allocator);

// Allocates and counts; throws tach::Error naming the device and size when it fails.
void* allocate_bytes(Device device, size_t bytes, MemoryCategory category);
void deallocate_bytes(Device device, void* ptr, size_t bytes, MemoryCategory category);

// File-backed views are not allocations but still memory a run touches.
void account_mapped(Device device, int64_t delta_bytes);

// CPU alignment: enough for AVX-512 loads and for oneDNN's preferred alignment.
inline constexpr size_t kCpuAlignment = 64;

}  // namespace tach::core
