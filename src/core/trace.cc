#include "core/trace.h"

namespace tach::core {

std::atomic<TraceSink*> g_trace_sink{nullptr};

void set_trace_sink(TraceSink* sink) { g_trace_sink.store(sink, std::memory_order_release); }

ThreadAllocationCounters& thread_allocation_counters() {
  thread_local ThreadAllocationCounters counters;
  return counters;
}

uint32_t trace_thread_id() {
  static std::atomic<uint32_t> next{1};
  thread_local const uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

namespace {
thread_local uint16_t t_depth = 0;
}

void Span::begin(SpanKind kind, const char* name) {
  active_ = true;
  rec_.kind = kind;
  rec_.name = name;
  rec_.thread = trace_thread_id();
  rec_.depth = t_depth++;
  const auto& c = thread_allocation_counters();
  rec_.allocated_bytes = c.allocated;
  rec_.freed_bytes = c.freed;
  rec_.start_ns = steady_ns();
}

void Span::end() {
  rec_.end_ns = steady_ns();
  --t_depth;
  const auto& c = thread_allocation_counters();
  rec_.allocated_bytes = c.allocated - rec_.allocated_bytes;
  rec_.freed_bytes = c.freed - rec_.freed_bytes;
  if (TraceSink* sink = g_trace_sink.load(std::memory_order_acquire)) sink->record(std::move(rec_));
}

}  // namespace tach::core
