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
// compile); time: 60 plus 20 times what the calls should take (expected_call_s each).
double request_deadline_s(const std::string& op, int64_t calls = 0, double expected_call_s = 0);

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
