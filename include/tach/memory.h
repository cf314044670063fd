// Memory accounting: current and peak bytes per device and per category. Every byte tach
// allocates goes through the allocator and is counted here, exactly; file-backed views
// (weights mmapped from safetensors) are counted apart, as mapped bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tach/device.h"

namespace tach {

enum class MemoryCategory : uint8_t { weights, activations, workspace, gradients, optimizer_state, other };
inline constexpr int kMemoryCategoryCount = 6;
std::string_view memory_category_name(MemoryCategory c);

struct MemoryCounter {
  int64_t current = 0;  // bytes live now
  int64_t peak = 0;     // most bytes live at once since the last reset
};

struct MemoryStats {
  std::array<MemoryCounter, kMemoryCategoryCount> by_category;
  MemoryCounter total;         // sum over categories; its peak is the peak of the sum
  MemoryCounter mapped;        // file-backed views (not allocated by tach)
  MemoryCounter cached;        // freed blocks the allocator keeps for reuse (not in use, still resident)
  int64_t allocations = 0;     // allocate() calls since start
  int64_t frees = 0;
  const MemoryCounter& operator[](MemoryCategory c) const { return by_category[static_cast<int>(c)]; }
};

MemoryStats memory_stats(Device device);
// Returns the allocator's cached blocks to the system; the bytes released.
int64_t release_cached_memory(Device device);

// Sets every peak to the current value, so that a later phase measures its own peak.
void reset_memory_peaks(Device device);

}  // namespace tach
