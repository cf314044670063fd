// Memory accounting: current and peak bytes per device and per category. Every byte tach
// allocates goes through the allocator and is counted here, exactly; file-backed views
// (weights mmapped from safetensors) are counted apart, as mapped bytes.
#pragma once

#include <array>
#include <mutex>
#include <string>
#include <vector>
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
  MemoryCounter total;      // sum over categories; its peak is the peak of the sum
  MemoryCounter mapped;     // file-backed views (not allocated by tach)
  MemoryCounter cached;     // freed blocks the allocator keeps for reuse (not in use, still resident)
  int64_t allocations = 0;  // allocate() calls since start
  int64_t frees = 0;
  const MemoryCounter& operator[](MemoryCategory c) const { return by_category[static_cast<int>(c)]; }
};

MemoryStats memory_stats(Device device);
// Returns the allocator's cached blocks to the system; the bytes released.
int64_t release_cached_memory(Device device);

// Sets every peak to the current value, so that a later phase measures its own peak.
void reset_memory_peaks(Device device);

// A memory profiler as training scripts write one: measure(tag) snapshots the allocator per category, the
// process RSS and (with a GPU) the device's memory in use; set_baseline() marks a point (after
// loading a model, say); detect_leak() compares now with it. Thread-safe.
struct MemorySnapshot {
  std::string tag;
  MemoryStats allocator;
  int64_t rss_bytes = 0, peak_rss_bytes = 0;
  int64_t device_used_bytes = -1;  // CUDA: the device's memory in use (all processes); -1 without one
};

class MemoryProfiler {
 public:
  explicit MemoryProfiler(Device device = Device::cpu());
  MemorySnapshot measure(const std::string& tag);
  void set_baseline();  // measures, and keeps it as the baseline
  struct Leak {
    bool leak = false;
    int64_t growth_bytes = 0;          // allocator total now minus at the baseline
    std::vector<std::string> growing;  // "activations: +12.0 MiB"
    std::string explanation;
  };
  // Allocator growth since the baseline beyond threshold_bytes; an error without a baseline.
  Leak detect_leak(int64_t threshold_bytes) const;
  // The same for memory tach's allocator does not see (a PyTorch loop, any program): the device's
  // memory in use on a CUDA device, else the process's RSS, now against the baseline's.
  Leak detect_process_leak(int64_t threshold_bytes);
  std::vector<MemorySnapshot> history() const;

 private:
  Device device_;
  mutable std::mutex mu_;
  std::vector<MemorySnapshot> history_;
  int baseline_ = -1;
};

}  // namespace tach
