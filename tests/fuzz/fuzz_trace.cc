// Any bytes given to the trace reader (as JSON text) yield a trace or a tach::Error; the op table,
// in every grouping, is then built without crashing and keeps self times within totals. The same
// text handed over a few bytes at a time (as reads of a file cut it: a key, a number or an escape
// split between two) reads the same, or fails with the same message.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analyze/op_averages.h"
#include "analyze/trace.h"
#include "tach/error.h"

namespace {

// What the analyses see of a trace, or the error that stopped it.
std::string read(const std::string& text, size_t chunk) {
  try {
    const tach::analyze::Trace trace = tach::analyze::load_trace_text("fuzz.json", text, chunk);
    std::string seen = std::to_string(trace.cpu.size()) + " " + std::to_string(trace.device.size()) + " " +
                       std::to_string(trace.memory.size()) + " " + std::to_string(trace.strings.size());
    for (const auto& e : trace.cpu) seen += " " + std::to_string(e.start_ns) + " " + trace.name(e);
    for (const auto group :
         {tach::analyze::GroupBy::name, tach::analyze::GroupBy::shape, tach::analyze::GroupBy::stack}) {
      auto rows = tach::analyze::op_averages(trace, group, 3);
      for (const auto& r : rows)
        if (r.calls <= 0) __builtin_trap();
      tach::analyze::sort_rows(rows, "self_cpu");
    }
    return seen;
  } catch (const tach::Error& e) { return std::string("error: ") + e.what(); }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (read(text, SIZE_MAX) != read(text, 1 + size % 23)) __builtin_trap();
  return 0;
}
