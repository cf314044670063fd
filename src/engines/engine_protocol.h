// tach's side of the engine worker protocol (version 1, docs/engines.md): one JSON object per
// line each way; the worker's unasked first line says it is ready (its versions and devices) or
// that packages are missing; every request gets one reply, ok or an error of a kind.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/worker_process.h"
#include "tach/error.h"

namespace tach::engines {

constexpr int kProtocolVersion = 1;

// The worker's packages are missing: refused by name, with the command that installs them.
class EngineUnavailable : public Error {
 public:
  EngineUnavailable(const std::string& message, std::vector<std::string> missing, std::string install)
      : Error(message), missing_(std::move(missing)), install_(std::move(install)) {}
  const std::vector<std::string>& missing() const { return missing_; }
  const std::string& install() const { return install_; }

 private:
  std::vector<std::string> missing_;
  std::string install_;
};

// A reply with ok false. kind: "oom" | "bad_request" | "unsupported" | "runtime". The worker goes
// on serving after it.
class EngineReplyError : public Error {
 public:
  EngineReplyError(const std::string& kind, const std::string& message) : Error(message), kind_(kind) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

struct EngineLaunch {
  std::string engine;                                    // as the worker must name itself in "ready"
  std::vector<std::string> command;                      // engine_names.h worker_command(), or a test's
  std::vector<std::pair<std::string, std::string>> env;  // PYTHONPATH
  std::string stderr_log;
  double ready_timeout_s = 120;  // python3 importing torch on a loaded machine
};

struct EngineReady {
  std::string engine;
  int protocol = 0;
  nlohmann::json versions = nlohmann::json::object();  // {"python": "3.11.2", "torch": "2.5.1", ...}
  std::vector<std::string> devices;
};

// The deadline of each request, in seconds: load 600 (a download, an export); prepare 600 (a
// compile); time: 60 plus 20 times what the calls should take (expected_call_s each, the worker's
// own figure: at most a week in all, whatever it claims).
double request_deadline_s(const std::string& op, int64_t calls = 0, double expected_call_s = 0);

// What the worker writes, decoded apart from the process (the client and the fuzz target call
// these). Each throws Error naming what is wrong with the line, never the JSON library's exception.
//   One line as a JSON object (awaiting: what tach was waiting for, for the message).
nlohmann::json object_from_line(const std::string& line, const std::string& awaiting);
//   The first line: ready (its fields, for engine `engine` on protocol kProtocolVersion), or
//   EngineUnavailable (python: the interpreter named in its message).
EngineReady ready_from_first_line(const nlohmann::json& first, const std::string& engine, const std::string& python);
//   A reply to `op`: itself when ok is true, EngineReplyError when false.
nlohmann::json ok_reply(nlohmann::json reply, const std::string& engine, const std::string& op);
//   A time reply's per-call nanoseconds: `asked` non-negative integers.
std::vector<int64_t> timed_ns(const nlohmann::json& reply, int64_t asked, const std::string& engine);

// A load reply's one-time costs (docs/formats.md, engine_run.one_time).
struct EngineLoad {
  double load_s = 0;
  std::string setup_kind = "none";  // "torch.compile", "onnx export"
  double setup_s = 0;
  bool setup_cached = false;
  double setup_cache_age_s = -1;  // -1: not reused
};
EngineLoad load_from_reply(const nlohmann::json& reply, const std::string& engine);
//   An outputs reply's outputs: an object of named {shape, data}.
const nlohmann::json& outputs_of(const nlohmann::json& reply, const std::string& engine);
//   The values an output's shape holds; -1 for a negative dimension or a count past int64.
int64_t shape_elements(const std::vector<int64_t>& shape);

// A memory reply, in bytes (-1: the worker has no such figure, as for the device's on a CPU).
struct EngineMemory {
  int64_t rss_bytes = 0, peak_rss_bytes = 0;
  int64_t device_allocated_peak_bytes = -1, device_reserved_peak_bytes = -1;
};
EngineMemory memory_from_reply(const nlohmann::json& reply);

class EngineClient {
 public:
  // Starts the worker and reads its first line. Throws EngineUnavailable (missing packages),
  // WorkerFailure (no first line in time, an exit) or Error (a line that is not the protocol's).
  static std::unique_ptr<EngineClient> start(const EngineLaunch& launch);
  ~EngineClient();

  // One request and its reply (ok true). Throws EngineReplyError for ok false; WorkerFailure when
  // the worker times out, exits or writes a line that is not JSON (then it has been killed).
  nlohmann::json call(const nlohmann::json& request, double timeout_s);
  nlohmann::json call(const nlohmann::json& request) { return call(request, request_deadline_s(request.at("op"))); }
  // "quit", then waits for its exit (kills it after 5 s). Never throws.
  void quit();
  bool alive() { return process_.running(); }

  const EngineReady& ready() const { return ready_; }
  WorkerProcess& process() { return process_; }

 private:
  EngineClient(const EngineLaunch& launch)
      : launch_(launch), process_(WorkerSpawn{launch.command, launch.env, launch.stderr_log}) {}
  nlohmann::json read_json(double timeout_s, const std::string& awaiting);

  EngineLaunch launch_;
  WorkerProcess process_;
  EngineReady ready_;
};

// The protocol's own cost: `rounds` ping round trips (after 3 unmeasured), their median in ns.
double ping_round_trip_ns(EngineClient& client, int rounds = 50);

}  // namespace tach::engines
