// Requests and replies as nlohmann::json; the transport's failures become WorkerFailure (the
// worker killed), a reply's error an EngineReplyError (the worker still serving).
#include "engines/engine_protocol.h"

#include <algorithm>
#include <chrono>

namespace tach::engines {

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace

double request_deadline_s(const std::string& op, int64_t calls, double expected_call_s) {
  if (op == "load" || op == "prepare") return 600;
  if (op == "time") return 60 + 20 * double(std::max<int64_t>(calls, 1)) * expected_call_s;
  if (op == "inputs" || op == "outputs") return 120;
  return 30;  // ping, memory, quit
}

std::unique_ptr<EngineClient> EngineClient::start(const EngineLaunch& launch) {
  std::unique_ptr<EngineClient> c(new EngineClient(launch));
  const nlohmann::json first = c->read_json(launch.ready_timeout_s, "first line (ready or unavailable)");
  const std::string event = first.value("event", "");
  if (event == "unavailable") {
    const auto missing = first.value("missing", std::vector<std::string>{});
    const std::string install = first.value("install", "");
    c->process_.wait_exit(5);
    const std::string python = launch.command.empty() ? "python3" : launch.command.front();
    throw EngineUnavailable(
        "engine " + launch.engine + " needs the Python package" + (missing.size() == 1 ? " " : "s ") + joined(missing) +
            ", which " + python + " cannot import: install " + (missing.size() == 1 ? "it" : "them") + " with `" +
            install + "`, or name a Python that has " + (missing.size() == 1 ? "it" : "them") + " with --python PATH",
        missing, install);
  }
  if (event != "ready") {
    c->process_.kill();
    throw Error("engine " + launch.engine + "'s worker began with " + first.dump().substr(0, 200) +
                ", not the protocol's ready line");
  }
  c->ready_.engine = first.value("engine", "");
  c->ready_.protocol = first.value("protocol", 0);
  if (first.contains("versions") && first["versions"].is_object()) c->ready_.versions = first["versions"];
  c->ready_.devices = first.value("devices", std::vector<std::string>{});
  if (c->ready_.protocol != kProtocolVersion || c->ready_.engine != launch.engine) {
    c->process_.kill();
    throw Error("engine " + launch.engine + "'s worker speaks protocol " + std::to_string(c->ready_.protocol) +
                " as engine '" + c->ready_.engine + "'; tach speaks protocol " + std::to_string(kProtocolVersion) +
                " (is tach's Python package the same version as tach?)");
  }
  return c;
}

EngineClient::~EngineClient() { quit(); }

nlohmann::json EngineClient::read_json(double timeout_s, const std::string& awaiting) {
  const std::string line = process_.read_line(timeout_s, awaiting);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    process_.kill();
    const std::string tail = process_.stderr_tail();
    throw WorkerFailure("io",
                        "the worker wrote a line that is not JSON as its " + awaiting + ": " + line.substr(0, 200) +
                            (line.size() > 200 ? "..." : "") +
                            (tail.empty() ? "" : "; its last stderr lines (" + process_.stderr_log() + "):\n" + tail));
  }
  if (!j.is_object()) {
    process_.kill();
    throw WorkerFailure("io",
                        "the worker wrote " + line.substr(0, 200) + " as its " + awaiting + ", not a JSON object");
  }
  return j;
}

nlohmann::json EngineClient::call(const nlohmann::json& request, double timeout_s) {
  const std::string op = request.at("op");
  process_.write_line(request.dump(), std::min(timeout_s, 120.0));
  nlohmann::json reply = read_json(timeout_s, "reply to '" + op + "'");
  if (reply.value("ok", false)) return reply;
  const std::string kind = reply.value("kind", "runtime");
  const std::string error = reply.value("error", "(no message)");
  throw EngineReplyError(kind, launch_.engine + " " + op + ": " + error + (kind == "oom" ? " (out of memory)" : ""));
}

void EngineClient::quit() {
  if (!process_.exit_description().empty() || process_.pid() <= 0) return;
  try {
    process_.write_line(nlohmann::json{{"op", "quit"}}.dump(), 5);
    (void)process_.read_line(5, "reply to 'quit'");
  } catch (const Error&) {}
  (void)process_.wait_exit(5);
}

double ping_round_trip_ns(EngineClient& client, int rounds) {
  using Clock = std::chrono::steady_clock;
  const nlohmann::json ping = {{"op", "ping"}};
  for (int i = 0; i < 3; ++i) (void)client.call(ping);
  std::vector<double> ns;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = Clock::now();
    (void)client.call(ping);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  std::nth_element(ns.begin(), ns.begin() + long(ns.size() / 2), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace tach::engines
