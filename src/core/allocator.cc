#include "core/allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "tach/error.h"

namespace tach {

std::string_view memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::weights: return "weights";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::workspace: return "workspace";
    case MemoryCategory::gradients: return "gradients";
    case MemoryCategory::optimizer_state: return "optimizer_state";
    case MemoryCategory::other: return "other";
  }
  return "?";
}

namespace core {
namespace {

// Lock-free counters; peaks are raised with a CAS loop so they are exact under threads.
struct AtomicCounter {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};

  void add(int64_t delta) {
    const int64_t now = current.fetch_add(delta, std::memory_order_relaxed) + delta;
    int64_t seen = peak.load(std::memory_order_relaxed);
    while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  MemoryCounter snapshot() const { return {current.load(), peak.load()}; }
  void reset_peak() { peak.store(current.load()); }
};

struct Ledger {
  AtomicCounter by_category[kMemoryCategoryCount];
  AtomicCounter total;
  AtomicCounter mapped;
  std::atomic<int64_t> allocations{0};
  std::atomic<int64_t> frees{0};
};

constexpr int kMaxDevices = 16;
Ledger& ledger(Device device) {
  static Ledger cpu;
  static Ledger cuda[kMaxDevices];
  if (device.kind == DeviceKind::cpu) return cpu;
  check(device.index >= 0 && device.index < kMaxDevices, "device index out of range: " + device.str());
  return cuda[device.index];
}

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    const size_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    return std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
  }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
};

Allocator*& allocator_slot(DeviceKind kind) {
  static CpuAllocator cpu_allocator;
  static Allocator* slots[2] = {&cpu_allocator, nullptr};
  return slots[static_cast<int>(kind)];
}

}  // namespace

void register_allocator(DeviceKind kind, Allocator* allocator) { allocator_slot(kind) = allocator; }

void* allocate_bytes(Device device, size_t bytes, MemoryCategory category) {
  Allocator* a = allocator_slot(device.kind);
  if (a == nullptr)
    throw Error("no allocator for " + device.str() + ": this build of tach has no " +
                (device.kind == DeviceKind::cuda ? "CUDA backend (configure with -DTACH_CUDA=ON)" : "backend"));
  void* p = a->allocate(bytes);
  if (p == nullptr)
    throw Error("out of memory on " + device.str() + ": could not allocate " + std::to_string(bytes) + " bytes for " +
                std::string(memory_category_name(category)));
  Ledger& l = ledger(device);
  l.by_category[static_cast<int>(category)].add(static_cast<int64_t>(bytes));
  l.total.add(static_cast<int64_t>(bytes));
  l.allocations.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void deallocate_bytes(Device device, void* ptr, size_t bytes, MemoryCategory category) {
  if (ptr == nullptr) return;
  allocator_slot(device.kind)->deallocate(ptr, bytes);
  Ledger& l = ledger(device);
  l.by_category[static_cast<int>(category)].add(-static_cast<int64_t>(bytes));
  l.total.add(-static_cast<int64_t>(bytes));
  l.frees.fetch_add(1, std::memory_order_relaxed);
}

void account_mapped(Device device, int64_t delta_bytes) { ledger(device).mapped.add(delta_bytes); }

}  // namespace core

MemoryStats memory_stats(Device device) {
  core::Ledger& l = core::ledger(device);
  MemoryStats s;
  for (int i = 0; i < kMemoryCategoryCount; ++i) s.by_category[i] = l.by_category[i].snapshot();
  s.total = l.total.snapshot();
  s.mapped = l.mapped.snapshot();
  s.allocations = l.allocations.load();
  s.frees = l.frees.load();
  return s;
}

void reset_memory_peaks(Device device) {
  core::Ledger& l = core::ledger(device);
  for (auto& c : l.by_category) c.reset_peak();
  l.total.reset_peak();
  l.mapped.reset_peak();
}

}  // namespace tach
