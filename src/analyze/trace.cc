#include "analyze/trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "analyze/torch_flops.h"
#include "analyze/trace_reader.h"
#include "tach/error.h"

namespace tach::analyze {
namespace {

using nlohmann::json;

int64_t integer_of(const json& v, int64_t fallback = 0) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && std::fabs(d) < 9e18 ? static_cast<int64_t>(std::llround(d)) : fallback;
  }
  if (v.is_string()) {  // pids and tids are sometimes strings ("Spans", "PyTorch Profiler")
    const auto& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() && *end == '\0') return n;
    return static_cast<int64_t>(std::hash<std::string>{}(s)&0x3fffffffffffffffULL) | (int64_t(1) << 62);
  }
  return fallback;
}

// µs with fractional ns, as torch writes them, to integer ns (exact for any trace under 104 days
// of clock: doubles hold integers to 2^53).
int64_t ns_of(const json& v) {
  if (!v.is_number()) return 0;
  const double us = v.get<double>();
  return std::isfinite(us) && std::fabs(us) < 9e12 ? static_cast<int64_t>(std::llround(us * 1000.0)) : 0;
}

const json* arg(const json& args, const char* key) {
  if (!args.is_object()) return nullptr;
  const auto it = args.find(key);
  return it == args.end() ? nullptr : &*it;
}

// torch's input_shapes as Python prints them: one list per input, "[]" for a scalar and for a
// list of tensors (the trace's "Input Dims" holds the list's shapes; torch's shapes() does not).
std::string torch_shapes(const json& dims) {
  if (!dims.is_array()) return "[]";
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    const json& d = dims[i];
    const bool plain = d.is_array() && std::all_of(d.begin(), d.end(), [](const json& n) { return n.is_number(); });
    out += '[';
    for (size_t k = 0; plain && k < d.size(); ++k) out += (k ? ", " : "") + std::to_string(integer_of(d[k]));
    out += ']';
  }
  return out + "]";
}

// Python's str() of a nested list, for the input types.
void print_list(const json& v, std::string& out) {
  if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      print_list(v[i], out);
    }
    out += ']';
  } else if (v.is_number_integer() || v.is_number_unsigned()) {
    out += std::to_string(integer_of(v));
  } else if (v.is_string()) {
    out += v.get_ref<const std::string&>();
  } else {
    out += v.dump();
  }
}

std::vector<std::vector<int64_t>> shapes_of(const json& dims) {
  std::vector<std::vector<int64_t>> out;
  if (!dims.is_array()) return out;
  for (const auto& d : dims) {
    std::vector<int64_t> shape;
    if (d.is_array())
      for (const auto& n : d)
        if (n.is_number_integer() || n.is_number_unsigned()) shape.push_back(integer_of(n));
    out.push_back(std::move(shape));
  }
  return out;
}

bool is_c10d_work(const std::string& name) {
  static const char* const backends[] = {"gloo:", "nccl:", "mpi:", "ucc:", "xccl:", "hccl:"};
  return std::any_of(std::begin(backends), std::end(backends), [&](const char* b) { return name.rfind(b, 0) == 0; });
}

class Builder {
 public:
  explicit Builder(Trace& t) : t_(t) {}

  void event(json&& e) {
    if (!e.is_object()) return;
    const auto ph_it = e.find("ph");
    if (ph_it == e.end() || !ph_it->is_string()) return;
    const std::string& ph = ph_it->get_ref<const std::string&>();
    const auto name_it = e.find("name");
    const std::string name = name_it != e.end() && name_it->is_string() ? name_it->get<std::string>() : std::string();
    const json empty = json::object();
    const auto args_it = e.find("args");
    const json& args = args_it != e.end() ? *args_it : empty;
    if (ph == "X") {
      complete(e, name, args);
    } else if (ph == "i" || ph == "I") {
      if (name == "[memory]") memory(e, args);
    } else if (ph == "M") {
      if (name == "thread_name" && arg(args, "name") && arg(args, "name")->is_string())
        t_.thread_names[integer_of(e.value("tid", json()))] = (*arg(args, "name")).get<std::string>();
    } else if ((ph == "s" || ph == "f") && e.value("cat", std::string()) == "ac2g") {
      ++t_.flow_events;
    }
  }

  void field(const std::string& key, json&& v) {
    if (key == "deviceProperties" && v.is_array()) {
      t_.device_properties = std::move(v);
    } else if (key == "distributedInfo" && v.is_object()) {
      if (v.contains("rank")) t_.rank = static_cast<int>(integer_of(v["rank"], 0));
      if (v.contains("world_size")) t_.world_size = static_cast<int>(integer_of(v["world_size"], 1));
      if (v.contains("backend") && v["backend"].is_string()) t_.backend = v["backend"].get<std::string>();
      t_.distributed_info = std::move(v);
    } else if (key == "with_flops") {
      t_.with_flops = integer_of(v) != 0 || (v.is_boolean() && v.get<bool>());
    } else if (key == "record_shapes") {
      t_.record_shapes = integer_of(v) != 0 || (v.is_boolean() && v.get<bool>());
    } else if (key == "profile_memory") {
      t_.profile_memory = integer_of(v) != 0 || (v.is_boolean() && v.get<bool>());
    } else if (key == "with_stack") {
      t_.with_stack = integer_of(v) != 0 || (v.is_boolean() && v.get<bool>());
    } else if (key == "baseTimeNanoseconds") {
      t_.base_time_ns = integer_of(v);
    } else if (key == "schemaVersion") {
      t_.schema_version = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }

 private:
  void complete(const json& e, const std::string& name, const json& args) {
    const Category c = category_of(e.value("cat", std::string()));
    if (c == Category::other) return;
    const int64_t start = ns_of(e.value("ts", json()));
    const int64_t dur = std::max<int64_t>(0, ns_of(e.value("dur", json())));
    const json* ext = arg(args, "External id");
    const json* corr = arg(args, "correlation");
    if (on_device(c)) {
      DeviceEvent d;
      d.start_ns = start;
      d.end_ns = start + dur;
      const json* device = arg(args, "device");
      const json* stream = arg(args, "stream");
      d.device = device ? integer_of(*device) : integer_of(e.value("pid", json()));
      d.stream = stream ? integer_of(*stream) : integer_of(e.value("tid", json()));
      d.external_id = ext ? integer_of(*ext) : 0;
      d.correlation = corr ? integer_of(*corr) : 0;
      d.name = t_.strings.id(name);
      d.category = c;
      t_.device.push_back(d);
      return;
    }
    CpuEvent x;
    x.start_ns = start;
    x.end_ns = start + dur;
    x.tid = integer_of(e.value("tid", json()));
    x.external_id = ext ? integer_of(*ext) : 0;
    x.correlation = corr ? integer_of(*corr) : 0;
    x.name = t_.strings.id(name);
    const json* dims = arg(args, "Input Dims");
    std::string text = dims ? torch_shapes(*dims) : std::string("[]");
    if (const json* f = arg(args, "flops")) x.flops = std::max<int64_t>(0, integer_of(*f, 0));
    else if (dims) x.flops = torch_flops(name, shapes_of(*dims));
    x.shapes = t_.strings.id(text);
    text.clear();
    if (const json* types = arg(args, "Input type")) print_list(*types, text);
    x.types = t_.strings.id(text);
    x.category = c;
    x.is_async = c == Category::user_annotation && is_c10d_work(name);
    t_.cpu.push_back(x);
  }

  void memory(const json& e, const json& args) {
    MemoryEvent m;
    m.ts_ns = ns_of(e.value("ts", json()));
    if (const json* v = arg(args, "Bytes")) m.bytes = integer_of(*v);
    if (const json* v = arg(args, "Total Allocated")) m.total_allocated = integer_of(*v);
    if (const json* v = arg(args, "Total Reserved")) m.total_reserved = integer_of(*v);
    if (const json* v = arg(args, "Device Type")) m.device_type = static_cast<int>(integer_of(*v));
    if (const json* v = arg(args, "Device Id")) m.device_id = static_cast<int>(integer_of(*v, -1));
    t_.memory.push_back(m);
  }

  Trace& t_;
};

Trace load_with(const std::string& name, const std::function<void(const TraceCallbacks&)>& read) {
  Trace t;
  t.path = name;
  Builder b(t);
  TraceCallbacks callbacks;
  callbacks.event = [&](json&& e) { b.event(std::move(e)); };
  callbacks.field = [&](const std::string& key, json&& v) { b.field(key, std::move(v)); };
  callbacks.event_keys = {"ph", "cat", "name", "ts", "dur", "pid", "tid", "args"};
  callbacks.arg_keys = {"External id", "correlation", "device", "stream",          "flops",
                        "Input Dims",  "Input type",  "Bytes",  "Total Allocated", "Total Reserved",
                        "Device Type", "Device Id",   "name"};
  read(callbacks);
  return t;
}

}  // namespace

uint32_t Interner::id(const std::string& s) {
  const auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.push_back(s);
  ids_.emplace(s, id);
  return id;
}

Category category_of(const std::string& cat) {
  std::string c(cat);
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  // 1.x traces: Operator, Runtime, Kernel, Memcpy, Memset; 2.x: the snake_case names.
  if (c == "cpu_op" || c == "operator") return Category::cpu_op;
  if (c == "user_annotation") return Category::user_annotation;
  if (c == "python_function") return Category::python_function;
  if (c == "cuda_runtime" || c == "runtime") return Category::cuda_runtime;
  if (c == "cuda_driver") return Category::cuda_driver;
  if (c == "kernel") return Category::kernel;
  if (c == "gpu_memcpy" || c == "memcpy") return Category::gpu_memcpy;
  if (c == "gpu_memset" || c == "memset") return Category::gpu_memset;
  if (c == "gpu_user_annotation") return Category::gpu_user_annotation;
  return Category::other;
}

bool on_device(Category c) {
  return c == Category::kernel || c == Category::gpu_memcpy || c == Category::gpu_memset ||
         c == Category::gpu_user_annotation;
}

Trace load_trace(const std::string& path) {
  return load_with(path, [&](const TraceCallbacks& c) { read_trace_file(path, c); });
}

Trace load_trace_text(const std::string& name, const std::string& text) {
  return load_with(name, [&](const TraceCallbacks& c) { read_trace_text(name, text, c); });
}

}  // namespace tach::analyze
