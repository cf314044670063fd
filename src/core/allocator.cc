#include "core/allocator.h"
#include "core/trace.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "core/out_of_memory.h"
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
    while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {}
  }
  MemoryCounter snapshot() const { return {current.load(), peak.load()}; }
  void reset_peak() { peak.store(current.load()); }
};

struct Ledger {
  AtomicCounter by_category[kMemoryCategoryCount];
  AtomicCounter total;
  AtomicCounter mapped;
  AtomicCounter cached;
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

// Large blocks are kept after free and handed out again for a request of the same rounded
// size. A forward pass allocates the same activation sizes every time; without the cache each
// pass would fault its buffers in afresh from the kernel (about 1 us per 4 KiB page, ~30 ms
// per DistilBERT-base forward at batch 32). Bytes held are reported as `cached`, apart from
// bytes in use. TACH_CPU_CACHE_MB sets the bound (0 turns the cache off).
class CpuAllocator final : public Allocator {
 public:
  void* allocate(int, size_t bytes) override {
    const size_t size = rounded(bytes);
    if (size >= kMinCachedBlock) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        ledger_cached(-int64_t(size));
        return p;
      }
    }
    void* p = std::aligned_alloc(kCpuAlignment, size);
    if (p == nullptr && release_all() > 0) p = std::aligned_alloc(kCpuAlignment, size);  // retry with the cache emptied
    return p;
  }
  void deallocate(int, void* ptr, size_t bytes) override {
    const size_t size = rounded(bytes);
    if (size >= kMinCachedBlock) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + size <= limit()) {
        free_.emplace(size, ptr);
        ledger_cached(int64_t(size));
        return;
      }
    }
    std::free(ptr);
  }
  int64_t cached_bytes(int) override {
    std::lock_guard<std::mutex> lock(mu_);
    return int64_t(cached_);
  }
  int64_t release_cached(int) override { return int64_t(release_all()); }
  void copy(int, void* dst, const void* src, size_t bytes, Direction) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void fill_zero(int, void* dst, size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }
  size_t release_all() {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t freed = cached_;
    for (auto& [size, p] : free_) std::free(p);
    free_.clear();
    ledger_cached(-int64_t(freed));
    return freed;
  }

 private:
  static constexpr size_t kMinCachedBlock = size_t(1) << 20;
  static size_t rounded(size_t bytes) {
    // Pages for large blocks (so that near sizes share), cache lines for the rest.
    const size_t unit = bytes >= kMinCachedBlock ? 4096 : kCpuAlignment;
    return bytes == 0 ? kCpuAlignment : (bytes + unit - 1) / unit * unit;
  }
  static size_t limit() {
    static const size_t bytes = [] {
      const char* env = std::getenv("TACH_CPU_CACHE_MB");
      return (env ? size_t(std::strtoull(env, nullptr, 10)) : size_t(1024)) << 20;
    }();
    return bytes;
  }
  void ledger_cached(int64_t delta);

  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
};

void CpuAllocator::ledger_cached(int64_t delta) {
  cached_ = size_t(int64_t(cached_) + delta);
  ledger(Device::cpu()).cached.add(delta);
}

CpuAllocator& cpu_allocator() {
  // Never destroyed: tensors in static objects may be freed after main returns.
  static CpuAllocator* a = new CpuAllocator();
  return *a;
}

Allocator*& allocator_slot(DeviceKind kind) {
  static Allocator* slots[2] = {&cpu_allocator(), nullptr};
  return slots[static_cast<int>(kind)];
}

}  // namespace

void register_allocator(DeviceKind kind, Allocator* allocator) { allocator_slot(kind) = allocator; }

namespace {
Allocator& allocator_for(Device device) {
  Allocator* a = allocator_slot(device.kind);
  if (a == nullptr)
    throw Error("no allocator for " + device.str() + ": this build of tach has no " +
                (device.kind == DeviceKind::cuda ? "CUDA backend (configure with -DTACH_CUDA=ON)" : "backend"));
  return *a;
}
}  // namespace

namespace {
// TACH_MEMORY_LIMIT_MB caps the bytes in use on each device (read once; unset or 0: no cap), so
// that running out of memory, and what tach says then, can be tried on any machine.
int64_t memory_limit_bytes() {
  static const int64_t limit = [] {
    const char* env = std::getenv("TACH_MEMORY_LIMIT_MB");
    return env ? int64_t(std::strtoll(env, nullptr, 10)) << 20 : int64_t(0);
  }();
  return limit;
}
}  // namespace

void* allocate_bytes(Device device, size_t bytes, MemoryCategory category) {
  const int64_t limit = memory_limit_bytes();
  if (limit > 0 && ledger(device).total.current.load() + int64_t(bytes) > limit)
    throw OutOfMemory("out of memory on " + device.str() + ": could not allocate " + std::to_string(bytes) +
                      " bytes for " + std::string(memory_category_name(category)) +
                      " (TACH_MEMORY_LIMIT_MB=" + std::to_string(limit >> 20) + " caps the bytes in use)");
  void* p = allocator_for(device).allocate(device.index, bytes);
  if (p == nullptr)
    throw OutOfMemory("out of memory on " + device.str() + ": could not allocate " + std::to_string(bytes) +
                      " bytes for " + std::string(memory_category_name(category)));
  Ledger& l = ledger(device);
  l.by_category[static_cast<int>(category)].add(static_cast<int64_t>(bytes));
  l.total.add(static_cast<int64_t>(bytes));
  l.allocations.fetch_add(1, std::memory_order_relaxed);
  thread_allocation_counters().allocated += static_cast<int64_t>(bytes);
  return p;
}

void deallocate_bytes(Device device, void* ptr, size_t bytes, MemoryCategory category) {
  if (ptr == nullptr) return;
  allocator_slot(device.kind)->deallocate(device.index, ptr, bytes);
  Ledger& l = ledger(device);
  l.by_category[static_cast<int>(category)].add(-static_cast<int64_t>(bytes));
  l.total.add(-static_cast<int64_t>(bytes));
  l.frees.fetch_add(1, std::memory_order_relaxed);
  thread_allocation_counters().freed += static_cast<int64_t>(bytes);
}

void account_mapped(Device device, int64_t delta_bytes) { ledger(device).mapped.add(delta_bytes); }

void zero_bytes(Device device, void* dst, size_t bytes) {
  if (bytes) allocator_for(device).fill_zero(device.index, dst, bytes);
}

void copy_bytes(Device dst_device, void* dst, Device src_device, const void* src, size_t bytes) {
  using Direction = Allocator::Direction;
  if (bytes == 0) return;
  if (dst_device.kind == DeviceKind::cpu && src_device.kind == DeviceKind::cpu) {
    std::memcpy(dst, src, bytes);
  } else if (dst_device.kind == DeviceKind::cpu) {
    allocator_for(src_device).copy(src_device.index, dst, src, bytes, Direction::to_host);
  } else if (src_device.kind == DeviceKind::cpu) {
    allocator_for(dst_device).copy(dst_device.index, dst, src, bytes, Direction::from_host);
  } else if (dst_device == src_device) {
    allocator_for(dst_device).copy(dst_device.index, dst, src, bytes, Direction::within_device);
  } else {
    // Two different GPUs: through the host, which every pair of devices can do.
    std::vector<unsigned char> staging(bytes);
    allocator_for(src_device).copy(src_device.index, staging.data(), src, bytes, Direction::to_host);
    allocator_for(dst_device).copy(dst_device.index, dst, staging.data(), bytes, Direction::from_host);
  }
}

}  // namespace core

int64_t release_cached_memory(Device device) {
  core::Allocator* a = core::allocator_slot(device.kind);
  return a ? a->release_cached(device.index) : 0;
}

MemoryStats memory_stats(Device device) {
  core::Ledger& l = core::ledger(device);
  MemoryStats s;
  for (int i = 0; i < kMemoryCategoryCount; ++i) s.by_category[i] = l.by_category[i].snapshot();
  s.total = l.total.snapshot();
  s.mapped = l.mapped.snapshot();
  s.cached = l.cached.snapshot();
  // A device pool keeps its own books of what it holds back; ask it (peak: the largest seen here).
  if (device.kind != DeviceKind::cpu)
    if (core::Allocator* a = core::allocator_slot(device.kind)) {
      s.cached.current = a->cached_bytes(device.index);
      s.cached.peak = std::max(s.cached.peak, s.cached.current);
    }
  s.allocations = l.allocations.load();
  s.frees = l.frees.load();
  return s;
}

void reset_memory_peaks(Device device) {
  core::Ledger& l = core::ledger(device);
  for (auto& c : l.by_category) c.reset_peak();
  l.total.reset_peak();
  l.mapped.reset_peak();
  l.cached.reset_peak();
}

}  // namespace tach
