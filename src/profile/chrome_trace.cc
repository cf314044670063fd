// Chrome trace event format (the JSON ui.perfetto.dev and chrome://tracing read) and collapsed
// stacks. Timestamps are microseconds since the profiler started, converted in to_us() only.
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tach/error.h"
#include "tach/profile.h"

namespace tach {

namespace {

double to_us(int64_t ns, int64_t origin_ns) { return double(ns - origin_ns) * 1e-3; }

const char* category(EventKind k) {
  switch (k) {
    case EventKind::op: return "op";
    case EventKind::module: return "module";
    default: return "scope";
  }
}

}  // namespace

std::string chrome_trace_json(const ProfileData& d) {
  nlohmann::json events = nlohmann::json::array();
  const int pid = 1;
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", "tach"}}}});
  std::map<uint32_t, bool> threads;
  for (const auto& e : d.events) threads[e.thread] = true;
  for (const auto& [tid, _] : threads)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", tid == 1 ? std::string("main") : "thread " + std::to_string(tid)}}}});
  // Steps as slices on their own track, so that every op sits visibly inside its step.
  for (const auto& s : d.steps) {
    if (!s.active) continue;
    events.push_back({{"name", "ProfilerStep#" + std::to_string(s.step)},
                      {"cat", "step"},
                      {"ph", "X"},
                      {"ts", to_us(s.start_ns, d.origin_ns)},
                      {"dur", double(s.end_ns - s.start_ns) * 1e-3},
                      {"pid", pid},
                      {"tid", 0}});
  }
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "steps"}}}});
  for (const auto& e : d.events) {
    nlohmann::json args = {{"self_us", e.self_ns * 1e-3}, {"step", e.step}};
    if (e.kind == EventKind::op) {
      args["shapes"] = e.detail;
      args["module"] = e.path;
      args["flops"] = e.flops;
      args["bytes"] = e.bytes;
    }
    if (e.allocated_bytes || e.freed_bytes) {
      args["allocated_bytes"] = e.allocated_bytes;
      args["freed_bytes"] = e.freed_bytes;
    }
    if (e.gpu_ns > 0) args["gpu_us"] = e.gpu_ns * 1e-3;
    events.push_back({{"name", e.name},
                      {"cat", category(e.kind)},
                      {"ph", "X"},
                      {"ts", to_us(e.start_ns, d.origin_ns)},
                      {"dur", double(e.duration_ns()) * 1e-3},
                      {"pid", pid},
                      {"tid", e.thread},
                      {"args", args}});
  }
  // GPU activity (CUPTI): a process per GPU, a thread per stream, each kernel, copy and memset
  // as a slice with its launching op, and a flow arrow from the launch to the work.
  std::map<std::pair<uint32_t, uint32_t>, bool> gpu_tracks;
  for (size_t i = 0; i < d.gpu_activity.size(); ++i) {
    const GpuActivityEvent& g = d.gpu_activity[i];
    const int gpid = 100 + int(g.device);
    if (!gpu_tracks[{g.device, g.stream}]) {
      gpu_tracks[{g.device, g.stream}] = true;
      events.push_back({{"name", "process_name"},
                        {"ph", "M"},
                        {"pid", gpid},
                        {"args", {{"name", "GPU " + std::to_string(g.device)}}}});
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", gpid},
                        {"tid", g.stream},
                        {"args", {{"name", "stream " + std::to_string(g.stream)}}}});
    }
    nlohmann::json args = {{"step", g.step}};
    if (g.bytes) args["bytes"] = g.bytes;
    if (g.op >= 0) {
      const ProfileEvent& op = d.events[size_t(g.op)];
      args["op"] = op.name;
      args["module"] = op.path;
    }
    events.push_back({{"name", g.name},
                      {"cat", g.kind},
                      {"ph", "X"},
                      {"ts", to_us(g.start_ns, d.origin_ns)},
                      {"dur", double(g.end_ns - g.start_ns) * 1e-3},
                      {"pid", gpid},
                      {"tid", g.stream},
                      {"args", args}});
    if (g.op >= 0 && g.launch_ns >= 0) {
      const ProfileEvent& op = d.events[size_t(g.op)];
      events.push_back({{"name", "launch"},
                        {"cat", "launch"},
                        {"ph", "s"},
                        {"id", i},
                        {"pid", pid},
                        {"tid", op.thread},
                        {"ts", to_us(g.launch_ns, d.origin_ns)}});
      events.push_back({{"name", "launch"},
                        {"cat", "launch"},
                        {"ph", "f"},
                        {"bp", "e"},
                        {"id", i},
                        {"pid", gpid},
                        {"tid", g.stream},
                        {"ts", to_us(g.start_ns, d.origin_ns)}});
    }
  }
  // Counter tracks: allocator bytes per category, and RSS, at each step's end.
  for (const auto& s : d.steps) {
    if (s.rss_bytes == 0 && s.allocator_total_bytes == 0) continue;
    nlohmann::json alloc;
    for (int c = 0; c < kMemoryCategoryCount; ++c)
      alloc[std::string(memory_category_name(MemoryCategory(c)))] = s.allocator_bytes[size_t(c)];
    events.push_back({{"name", "allocator bytes"},
                      {"ph", "C"},
                      {"ts", to_us(s.end_ns, d.origin_ns)},
                      {"pid", pid},
                      {"args", alloc}});
    events.push_back({{"name", "RSS bytes"},
                      {"ph", "C"},
                      {"ts", to_us(s.end_ns, d.origin_ns)},
                      {"pid", pid},
                      {"args", {{"rss", s.rss_bytes}}}});
    if (s.cpu_energy_j >= 0)
      events.push_back({{"name", "CPU energy J (RAPL)"},
                        {"ph", "C"},
                        {"ts", to_us(s.end_ns, d.origin_ns)},
                        {"pid", pid},
                        {"args", {{"joules", s.cpu_energy_j}}}});
  }
  nlohmann::json trace = {
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"producer", "tach"},
        {"schedule", d.schedule.describe()},
        {"dropped_events", d.dropped_events},
        {"timestamps", "microseconds since profiler start"},
        {"gpu_activity", d.gpu_activity_note.empty() ? std::to_string(d.gpu_activity.size()) + " records (CUPTI)"
                                                     : d.gpu_activity_note}}}};
  std::string text = trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (d.distributed.world_size > 1) {
    // First in the object and spaced as Kineto writes it: Holistic Trace Analysis finds each
    // file's rank with a text search for `"rank": N` before it parses anything.
    const nlohmann::json backend = d.distributed.backend;
    text.insert(1, "\"distributedInfo\": {\"backend\": " + backend.dump() +
                       ", \"rank\": " + std::to_string(d.distributed.rank) +
                       ", \"world_size\": " + std::to_string(d.distributed.world_size) + "}, ");
  }
  return text;
}

std::string collapsed_stacks(const ProfileData& d) {
  std::map<std::string, double> weights;  // stack -> self µs
  for (const auto& e : d.events) {
    // Frames are spans, not dots: names such as "layers.3" hold dots of their own.
    const std::string stack = e.stack.empty() ? e.name : e.stack + ";" + e.name;
    weights[stack] += e.self_ns * 1e-3;
  }
  std::ostringstream s;
  for (const auto& [stack, us] : weights)
    if (us >= 0.5) s << stack << " " << std::llround(us) << "\n";
  return s.str();
}

void write_chrome_trace(const ProfileData& data, const std::string& path) {
  const std::string text = chrome_trace_json(data);
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    gzFile f = gzopen(path.c_str(), "wb6");
    check(f != nullptr, path + ": cannot write");
    const int written = gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    const int closed = gzclose(f);
    check(written == int(text.size()) && closed == Z_OK, path + ": gzip write failed (disk full?)");
    return;
  }
  std::ofstream out(path, std::ios::binary);
  check(static_cast<bool>(out), path + ": cannot write");
  out << text;
  check(static_cast<bool>(out.flush()), path + ": write failed (disk full?)");
}

}  // namespace tach
