// Any bytes a worker could write to tach bench --engine, split into lines as the client splits
// them: the first line decodes to a ready engine or a tach::Error (EngineUnavailable included), and
// each later line, as the reply to the ops in the order a point sends them, to an ok reply whose
// one-time costs, outputs, ns list and memory decode, or to a tach::Error. A deadline from what the
// worker claims stays finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engines/engine_protocol.h"
#include "tach/error.h"

namespace {

// As WorkerProcess::read_line: up to each '\n', less a trailing '\r'; what follows the last '\n'
// is never read (the worker has not finished that line).
std::vector<std::string> worker_lines(const std::string& bytes) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl = bytes.find('\n'); nl != std::string::npos; start = nl + 1, nl = bytes.find('\n', start)) {
    std::string line = bytes.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

void decode_reply(const std::string& line, const char* op) {
  using namespace tach::engines;
  const std::string engine = "python-matmul";
  const nlohmann::json reply = ok_reply(object_from_line(line, std::string("reply to '") + op + "'"), engine, op);
  const std::string o = op;
  if (o == "load") {
    const EngineLoad l = load_from_reply(reply, engine);
    const double deadline = request_deadline_s("time", 64, std::max(l.load_s, 1.0));
    if (!std::isfinite(deadline) || deadline <= 0) __builtin_trap();
  } else if (o == "outputs") {
    // As the bench compares them: each output's shape as int64 dimensions (a JSON library error
    // there is the comparison's note, not a failure), then the values it holds.
    for (const auto& [name, output] : outputs_of(reply, engine).items()) {
      try {
        const int64_t count = shape_elements(output.at("shape").get<std::vector<int64_t>>());
        if (count < -1) __builtin_trap();
      } catch (const nlohmann::json::exception&) {}
    }
  } else if (o == "prepare") {
    const auto it = reply.find("first_call_s");
    const double first = it != reply.end() && it->is_number() ? it->get<double>() : 0;
    const double deadline = request_deadline_s("time", 64, std::max(first, 0.01));
    if (!std::isfinite(deadline) || deadline <= 0) __builtin_trap();
  } else if (o == "time") {
    const auto ns = reply.find("ns");
    const int64_t asked = ns != reply.end() && ns->is_array() ? int64_t(ns->size()) : 1;
    for (int64_t v : timed_ns(reply, asked, engine))
      if (v < 0) __builtin_trap();
  } else if (o == "memory") {
    (void)memory_from_reply(reply);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tach::engines;
  const auto lines = worker_lines(std::string(reinterpret_cast<const char*>(data), size));
  if (lines.empty()) return 0;
  try {
    const EngineReady ready =
        ready_from_first_line(object_from_line(lines[0], "first line"), "python-matmul", "python3");
    if (ready.protocol != kProtocolVersion || ready.engine != "python-matmul") __builtin_trap();
  } catch (const tach::Error&) {}
  // The replies a point reads, in its order (ping first, as the worker's start measures it).
  static const char* const ops[] = {"ping", "load", "inputs", "outputs", "prepare", "time", "memory", "time", "memory"};
  for (size_t i = 1; i < lines.size(); ++i) {
    try {
      decode_reply(lines[i], ops[(i - 1) % (sizeof ops / sizeof *ops)]);
    } catch (const tach::Error&) {}
  }
  return 0;
}
