// The recording seam every op and module uses: a span (an op, a module, or a user scope) with
// its cost, shapes and the bytes its thread allocated and freed. Off, a span is one relaxed
// load and a predictable branch. The profiler (src/profile/) installs the sink that receives
// spans; core only carries them, so that ops and models (above the profiler in the room order)
// can record without depending on it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>

namespace tach::core {

enum class SpanKind : uint8_t { op, module, scope };

struct SpanRecord {
  SpanKind kind = SpanKind::op;
  std::string name;                              // op name ("linear") or module/scope name ("layer.3", "attention")
  std::string detail;                            // shapes and dtype, for ops ("[1024, 768] x [2304, 768]ᵀ f32")
  int64_t start_ns = 0, end_ns = 0;              // steady clock
  double flops = 0, bytes = 0;                   // the op's declared cost
  int64_t allocated_bytes = 0, freed_bytes = 0;  // by this thread during the span
  uint32_t thread = 0;                           // small id of the recording thread
  uint16_t depth = 0;                            // nesting on its thread (0 = outermost)
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void record(SpanRecord&& span) = 0;
};

// Streams its arguments into one string: span details without operator+ chains (which also
// trip GCC 12's -Wrestrict false positive, bug 105329).
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

// The installed sink, or null (recording off).
extern std::atomic<TraceSink*> g_trace_sink;
inline bool tracing() { return g_trace_sink.load(std::memory_order_relaxed) != nullptr; }
void set_trace_sink(TraceSink* sink);

inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Bytes this thread allocated and freed through tach's allocator since it started.
struct ThreadAllocationCounters {
  int64_t allocated = 0, freed = 0;
};
ThreadAllocationCounters& thread_allocation_counters();
uint32_t trace_thread_id();

// A span, recorded when it ends if a sink is installed when it begins. Not copyable.
class Span {
 public:
  Span(SpanKind kind, const char* name) {
    if (tracing()) begin(kind, name);
  }
  Span(SpanKind kind, const std::string& name) {
    if (tracing()) begin(kind, name.c_str());
  }
  ~Span() {
    if (active_) end();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  bool active() const { return active_; }
  // Ops call these only when active() (building strings costs).
  void set_cost(double flops, double bytes) {
    rec_.flops = flops;
    rec_.bytes = bytes;
  }
  void set_detail(std::string detail) { rec_.detail = std::move(detail); }

 private:
  void begin(SpanKind kind, const char* name);
  void end();
  bool active_ = false;
  SpanRecord rec_;
};

}  // namespace tach::core
