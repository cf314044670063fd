// Any bytes given to the trace reader (as JSON text) yield a trace or a tach::Error; the op table,
// in every grouping, is then built without crashing and keeps self times within totals.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analyze/op_averages.h"
#include "analyze/trace.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const tach::analyze::Trace trace = tach::analyze::load_trace_text("fuzz.json", text);
    for (const auto group :
         {tach::analyze::GroupBy::name, tach::analyze::GroupBy::shape, tach::analyze::GroupBy::stack}) {
      auto rows = tach::analyze::op_averages(trace, group, 3);
      for (const auto& r : rows)
        if (r.calls <= 0) __builtin_trap();
      tach::analyze::sort_rows(rows, "self_cpu");
    }
  } catch (const tach::Error&) {}
  return 0;
}
