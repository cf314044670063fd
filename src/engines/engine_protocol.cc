// Requests and replies as nlohmann::json; the transport's failures become WorkerFailure (the
// worker killed), a reply's error an EngineReplyError (the worker still serving).
#include "engines/engine_protocol.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace tach::engines {

namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// Nothing the protocol sends nests past 4 levels; a deeper line is refused before the JSON library's
// recursive writer (the messages show a line) could exhaust the stack on it.
constexpr int kDeepestNesting = 64;
constexpr double kLongestDeadlineS = 7 * 24 * 3600.0;

// Whether the brackets of a JSON text (outside its strings) nest deeper than `limit`.
bool nests_deeper_than(const std::string& text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > limit) return true;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return false;
}

// A field of the worker's JSON: `fallback` where absent or null, an Error where of another type.
std::string string_field(const nlohmann::json& j, const char* key, const std::string& fallback,
                         const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  check(it->is_string(), where + " has " + key + " " + it->dump().substr(0, 80) + ", not a string");
  return it->get<std::string>();
}

std::vector<std::string> strings_field(const nlohmann::json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  check(it->is_array(), where + " has " + key + " " + it->dump().substr(0, 80) + ", not a list of strings");
  for (const auto& v : *it) {
    check(v.is_string(), where + " has " + v.dump().substr(0, 80) + " in " + key + ", not a string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// A byte count: an integer (or a whole float) in int64's range; `fallback` where absent or not a
// number, as the worker leaves out what it cannot measure.
int64_t bytes_field(const nlohmann::json& j, const char* key, int64_t fallback) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  if (it->is_number_integer()) {
    check(!it->is_number_unsigned() || it->get<uint64_t>() <= uint64_t(INT64_MAX),
          std::string("the worker's memory reply has ") + key + " " + it->dump() + ", past any byte count");
    return it->get<int64_t>();
  }
  const double v = it->get<double>();
  check(std::isfinite(v) && std::abs(v) < 9e18,
        std::string("the worker's memory reply has ") + key + " " + it->dump() + ", past any byte count");
  return int64_t(v);
}

}  // namespace

double request_deadline_s(const std::string& op, int64_t calls, double expected_call_s) {
  if (op == "load" || op == "prepare") return 600;
  if (op == "time") {
    const double s = 60 + 20 * double(std::max<int64_t>(calls, 1)) * std::max(expected_call_s, 0.0);
    return std::isfinite(s) ? std::min(s, kLongestDeadlineS) : kLongestDeadlineS;
  }
  if (op == "inputs" || op == "outputs") return 120;
  return 30;  // ping, memory, quit
}

nlohmann::json object_from_line(const std::string& line, const std::string& awaiting) {
  const std::string shown = line.substr(0, 200) + (line.size() > 200 ? "..." : "");
  if (nests_deeper_than(line, kDeepestNesting))
    throw Error("the worker wrote a line nested deeper than " + std::to_string(kDeepestNesting) + " levels as its " +
                awaiting + ": " + shown);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    throw Error("the worker wrote a line that is not JSON as its " + awaiting + ": " + shown);
  }
  if (!j.is_object()) throw Error("the worker wrote " + shown + " as its " + awaiting + ", not a JSON object");
  return j;
}

EngineReady ready_from_first_line(const nlohmann::json& first, const std::string& engine, const std::string& python) {
  const std::string where = "engine " + engine + "'s worker's first line";
  const std::string event = string_field(first, "event", "", where);
  if (event == "unavailable") {
    const auto missing = strings_field(first, "missing", where);
    const std::string install = string_field(first, "install", "", where);
    const char* them = missing.size() == 1 ? "it" : "them";
    throw EngineUnavailable("engine " + engine + " needs the Python package" + (missing.size() == 1 ? " " : "s ") +
                                joined(missing) + ", which " + python + " cannot import: install " + them + " with `" +
                                install + "`, or name a Python that has " + them + " with --python PATH",
                            missing, install);
  }
  if (event != "ready")
    throw Error("engine " + engine + "'s worker began with " + first.dump().substr(0, 200) +
                ", not the protocol's ready line");
  EngineReady ready;
  ready.engine = string_field(first, "engine", "", where);
  const auto protocol = first.find("protocol");
  const bool speaks = protocol != first.end() && protocol->is_number_integer() && *protocol == kProtocolVersion;
  if (!speaks || ready.engine != engine)
    throw Error("engine " + engine + "'s worker speaks protocol " +
                (protocol == first.end() ? std::string("(none)") : protocol->dump().substr(0, 40)) + " as engine '" +
                ready.engine + "'; tach speaks protocol " + std::to_string(kProtocolVersion) +
                " (is tach's Python package the same version as tach?)");
  ready.protocol = kProtocolVersion;
  if (const auto v = first.find("versions"); v != first.end() && v->is_object()) ready.versions = *v;
  ready.devices = strings_field(first, "devices", where);
  return ready;
}

nlohmann::json ok_reply(nlohmann::json reply, const std::string& engine, const std::string& op) {
  const std::string where = engine + "'s reply to '" + op + "'";
  const auto ok = reply.find("ok");
  if (ok == reply.end() || !ok->is_boolean())
    throw Error(where + " has " + (ok == reply.end() ? std::string("no ok") : "ok " + ok->dump().substr(0, 40)) +
                ", not true or false");
  if (ok->get<bool>()) return reply;
  const std::string kind = string_field(reply, "kind", "runtime", where);
  const std::string error = string_field(reply, "error", "(no message)", where);
  throw EngineReplyError(kind, engine + " " + op + ": " + error + (kind == "oom" ? " (out of memory)" : ""));
}

std::vector<int64_t> timed_ns(const nlohmann::json& reply, int64_t asked, const std::string& engine) {
  const std::string where = engine + "'s reply to 'time'";
  const auto ns = reply.find("ns");
  check(ns != reply.end() && ns->is_array(), where + " has no ns list");
  std::vector<int64_t> out;
  for (const auto& v : *ns) {
    if (!v.is_number_integer() || v < 0)
      throw Error(where + " has " + v.dump().substr(0, 40) + " in ns, not nanoseconds");
    out.push_back(v.get<int64_t>());
  }
  check(int64_t(out.size()) == asked, "engine " + engine + " timed " + std::to_string(out.size()) + " calls of the " +
                                          std::to_string(asked) + " asked for");
  return out;
}

EngineLoad load_from_reply(const nlohmann::json& reply, const std::string& engine) {
  EngineLoad l;
  l.load_s = number_or(reply, "load_s", l.load_s);
  if (const auto setup = reply.find("setup"); setup != reply.end() && setup->is_object()) {
    const std::string where = engine + "'s reply to 'load'";
    l.setup_kind = string_field(*setup, "kind", l.setup_kind, where + " (setup)");
    l.setup_s = number_or(*setup, "seconds", l.setup_s);
    if (const auto cached = setup->find("cached"); cached != setup->end() && cached->is_boolean())
      l.setup_cached = cached->get<bool>();
    l.setup_cache_age_s = number_or(*setup, "cache_age_s", l.setup_cache_age_s);
  }
  return l;
}

const nlohmann::json& outputs_of(const nlohmann::json& reply, const std::string& engine) {
  const auto outputs = reply.find("outputs");
  check(outputs != reply.end() && outputs->is_object(), engine + "'s reply to 'outputs' has no outputs object");
  return *outputs;
}

int64_t shape_elements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (const int64_t d : shape) {
    if (d < 0 || (d > 0 && count > INT64_MAX / d)) return -1;
    count *= d;
  }
  return count;
}

EngineMemory memory_from_reply(const nlohmann::json& reply) {
  EngineMemory m;
  m.rss_bytes = bytes_field(reply, "rss_bytes", m.rss_bytes);
  m.peak_rss_bytes = bytes_field(reply, "peak_rss_bytes", m.peak_rss_bytes);
  m.device_allocated_peak_bytes = bytes_field(reply, "device_allocated_peak_bytes", m.device_allocated_peak_bytes);
  m.device_reserved_peak_bytes = bytes_field(reply, "device_reserved_peak_bytes", m.device_reserved_peak_bytes);
  return m;
}

std::unique_ptr<EngineClient> EngineClient::start(const EngineLaunch& launch) {
  std::unique_ptr<EngineClient> c(new EngineClient(launch));
  const nlohmann::json first = c->read_json(launch.ready_timeout_s, "first line (ready or unavailable)");
  try {
    c->ready_ =
        ready_from_first_line(first, launch.engine, launch.command.empty() ? "python3" : launch.command.front());
  } catch (const EngineUnavailable&) {
    c->process_.wait_exit(5);
    throw;
  } catch (const Error&) {
    c->process_.kill();
    throw;
  }
  return c;
}

EngineClient::~EngineClient() { quit(); }

nlohmann::json EngineClient::read_json(double timeout_s, const std::string& awaiting) {
  const std::string line = process_.read_line(timeout_s, awaiting);
  try {
    return object_from_line(line, awaiting);
  } catch (const Error& e) {
    process_.kill();
    const std::string tail = process_.stderr_tail();
    throw WorkerFailure(
        "io", e.what() +
                  (tail.empty() ? std::string() : "; its last stderr lines (" + process_.stderr_log() + "):\n" + tail));
  }
}

nlohmann::json EngineClient::call(const nlohmann::json& request, double timeout_s) {
  const std::string op = request.at("op");
  process_.write_line(request.dump(), std::min(timeout_s, 120.0));
  nlohmann::json reply = read_json(timeout_s, "reply to '" + op + "'");
  try {
    return ok_reply(std::move(reply), launch_.engine, op);
  } catch (const EngineReplyError&) {
    throw;  // the worker goes on serving
  } catch (const Error& e) {
    process_.kill();
    throw WorkerFailure("io", e.what());
  }
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
