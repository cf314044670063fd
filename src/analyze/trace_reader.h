// Reading torch.profiler's Chrome trace JSON (.json, .json.gz) one event at a time.
//
// Why a streaming scanner and not simdjson's On-Demand: On-Demand parses a padded buffer that
// holds the whole document, so a 1 GB trace would need 1 GB of memory before any analysis. Here
// gzip is inflated as the scanner asks for bytes (plain JSON passed through), and the
// scanner takes from each event only the fields the analyses read, into one reused RawEvent:
// memory holds a 256 KiB buffer and one event whatever the trace's size. (nlohmann's SAX parser
// did the same job at a third of the speed, building a JSON value per event.) gzip is inflated by
// ISA-L's igzip, which streams as zlib does at about twice its speed; libdeflate, faster still,
// inflates only a whole buffer (the whole JSON in memory again).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tach::analyze {

// The fields of one trace event that tach reads; each event overwrites the previous one's.
struct RawEvent {
  std::string ph, cat, name;
  std::optional<int64_t> ts_ns, dur_ns;  // written in µs, read to the ns exactly
  int64_t pid = 0, tid = 0;              // a string pid or tid ("Spans") becomes a stable number
  // args
  std::optional<int64_t> external_id, correlation, device, stream, flops;
  std::optional<int64_t> bytes, total_allocated, total_reserved, device_type, device_id;
  std::string arg_name;                    // args.name (thread_name metadata)
  bool has_dims = false;                   // "Input Dims" present
  std::vector<std::vector<int64_t>> dims;  // one shape per input; [] for scalars and lists
  std::string shapes;                      // torch's input_shapes text: "[[64, 32], []]"
  std::string types;                       // "Input type" as Python prints it: "['float', 'Scalar']"
  void clear();
};

// Each element of traceEvents as a RawEvent, and the other top-level fields (deviceProperties,
// distributedInfo, with_flops, baseTimeNanoseconds, ...) as JSON values once read.
struct TraceCallbacks {
  std::function<void(const RawEvent& event)> event;
  std::function<void(const std::string& key, nlohmann::json&& value)> field;
};

// Reads path, gzip-compressed or not (told by its first bytes, not the name). Throws tach::Error
// naming the file and what is wrong: a truncated gzip stream, JSON cut short or malformed (with the
// byte offset), a document that is not a trace (neither an object with traceEvents nor an array
// of events).
void read_trace_file(const std::string& path, const TraceCallbacks& callbacks);

// The same over JSON text already in memory (tests, the fuzz target); name is used in errors.
// chunk: the most bytes the scanner is given at once, as a file's reads would (tests and the fuzz
// target cut the text anywhere: a key, a number or an escape split between two reads).
void read_trace_text(const std::string& name, const std::string& text, const TraceCallbacks& callbacks,
                     size_t chunk = SIZE_MAX);

}  // namespace tach::analyze
