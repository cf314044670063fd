// Reading torch.profiler's Chrome trace JSON (.json, .json.gz) one event at a time.
//
// Why a SAX parser and not simdjson's On-Demand: On-Demand parses a padded buffer that holds the
// whole document, so a 1 GB trace would need 1 GB of memory before any analysis. nlohmann::json's
// SAX interface takes a stream, and zlib's gzread decodes as it goes (and passes plain JSON
// through untouched), so the reader holds one event and a 256 KiB buffer whatever the trace's size.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace tach::analyze {

// What the reader hands on: each element of traceEvents as a small JSON object, and the other
// top-level fields (deviceProperties, distributedInfo, with_flops, baseTimeNanoseconds, ...) once
// the document has been read.
struct TraceCallbacks {
  std::function<void(nlohmann::json&& event)> event;
  // Which keys of each event, and of its "args", are built; the rest are parsed and skipped.
  // Empty: all.
  std::unordered_set<std::string> event_keys, arg_keys;
  std::function<void(const std::string& key, nlohmann::json&& value)> field;
};

// Reads path, gzip-compressed or not (zlib tells by the bytes, not the name). Throws tach::Error
// naming the file and what is wrong: a truncated gzip stream, JSON cut short or malformed (with the
// byte offset), a document that is not a trace (neither an object with traceEvents nor an array
// of events).
void read_trace_file(const std::string& path, const TraceCallbacks& callbacks);

// The same over JSON text already in memory (tests, the fuzz target); name is used in errors.
void read_trace_text(const std::string& name, const std::string& text, const TraceCallbacks& callbacks);

}  // namespace tach::analyze
