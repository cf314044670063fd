#include "analyze/trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>

#include "analyze/torch_flops.h"
#include "analyze/trace_reader.h"
#include "tach/error.h"

namespace tach::analyze {

// The sizes docs/perf.md gives for what a trace keeps per event.
static_assert(sizeof(CpuEvent) == 32 && sizeof(DeviceEvent) == 48 && sizeof(MemoryEvent) == 32);

namespace {

using nlohmann::json;

int64_t integer_of(const json& v, int64_t fallback = 0) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && std::fabs(d) < 9e18 ? static_cast<int64_t>(std::llround(d)) : fallback;
  }
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return fallback;
}

bool is_c10d_work(const std::string& name) {
  static const char* const backends[] = {"gloo:", "nccl:", "mpi:", "ucc:", "xccl:", "hccl:"};
  return std::any_of(std::begin(backends), std::end(backends), [&](const char* b) { return name.rfind(b, 0) == 0; });
}

class Builder {
 public:
  explicit Builder(Trace& t) : t_(t) {}

  void event(const RawEvent& e) {
    if (e.ph == "X") {
      complete(e);
    } else if (e.ph == "i" || e.ph == "I") {
      if (e.name == "[memory]") memory(e);
    } else if (e.ph == "M") {
      if (e.name == "thread_name" && !e.arg_name.empty()) t_.thread_names[e.tid] = e.arg_name;
    } else if ((e.ph == "s" || e.ph == "f") && e.cat == "ac2g") {
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
      t_.with_flops = integer_of(v) != 0;
    } else if (key == "record_shapes") {
      t_.record_shapes = integer_of(v) != 0;
    } else if (key == "profile_memory") {
      t_.profile_memory = integer_of(v) != 0;
    } else if (key == "with_stack") {
      t_.with_stack = integer_of(v) != 0;
    } else if (key == "baseTimeNanoseconds") {
      t_.base_time_ns = integer_of(v);
    } else if (key == "schemaVersion") {
      t_.schema_version = v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }

 private:
  void complete(const RawEvent& e) {
    const Category c = category_of(e.cat);
    if (c == Category::other) return;
    const int64_t start = e.ts_ns.value_or(0);
    const int64_t dur = std::max<int64_t>(0, e.dur_ns.value_or(0));
    if (on_device(c)) {
      DeviceEvent d;
      d.start_ns = start;
      d.end_ns = start + dur;
      d.stream = index_of(streams_, t_.streams, {e.device.value_or(e.pid), e.stream.value_or(e.tid)});
      d.external_id = e.external_id.value_or(0);
      d.correlation = e.correlation.value_or(0);
      d.name = t_.strings.id(e.name);
      d.category = c;
      t_.device.push_back(d);
      return;
    }
    Signature s;
    s.name = t_.strings.id(e.name);
    s.shapes = t_.strings.id(e.has_dims ? std::string_view(e.shapes) : std::string_view("[]"));
    if (e.flops) s.flops = std::max<int64_t>(0, *e.flops);
    else if (e.has_dims) s.flops = torch_flops(e.name, e.dims);
    s.types = t_.strings.id(e.types);
    s.category = c;
    s.is_async = c == Category::user_annotation && is_c10d_work(e.name);
    CpuEvent x;
    x.start_ns = start;
    x.end_ns = start + dur;
    const bool call = c == Category::cuda_runtime || c == Category::cuda_driver;
    x.id = (call ? e.correlation : e.external_id).value_or(0);
    x.signature = index_of(signatures_, t_.signatures, s);
    x.thread = index_of(threads_, t_.threads, e.tid);
    t_.cpu.push_back(x);
  }

  void memory(const RawEvent& e) {
    MemoryEvent m;
    m.ts_ns = e.ts_ns.value_or(0);
    m.bytes = e.bytes.value_or(0);
    m.total_allocated = e.total_allocated.value_or(0);
    m.device_type = static_cast<int>(e.device_type.value_or(0));
    t_.memory.push_back(m);
  }

  // The index of value in table, appended the first time it is seen.
  template <class Map, class T>
  static uint32_t index_of(Map& index, std::vector<T>& table, const T& value) {
    const auto [it, added] = index.try_emplace(value, static_cast<uint32_t>(table.size()));
    if (added) table.push_back(value);
    return it->second;
  }

  struct SignatureHash {
    size_t operator()(const Signature& s) const {
      uint64_t h = s.name;
      h = h * 0x9E3779B97F4A7C15ULL ^ s.shapes;
      h = h * 0x9E3779B97F4A7C15ULL ^ s.types;
      h = h * 0x9E3779B97F4A7C15ULL ^ uint64_t(s.flops);
      h = h * 0x9E3779B97F4A7C15ULL ^ (uint64_t(s.category) << 1 | uint64_t(s.is_async));
      return size_t(h ^ (h >> 29));
    }
  };
  struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
      // Unsigned: a trace's device and stream are any int64 (a product past it is no error).
      return std::hash<uint64_t>{}(uint64_t(p.first) * 1000003u ^ uint64_t(p.second));
    }
  };

  std::unordered_map<Signature, uint32_t, SignatureHash> signatures_;
  std::unordered_map<int64_t, uint32_t> threads_;
  std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, PairHash> streams_;
  Trace& t_;
};

Trace load_with(const std::string& name, const std::function<void(const TraceCallbacks&)>& read) {
  Trace t;
  t.path = name;
  Builder builder(t);
  TraceCallbacks callbacks;
  callbacks.event = [&](const RawEvent& e) { builder.event(e); };
  callbacks.field = [&](const std::string& key, json&& v) { builder.field(key, std::move(v)); };
  read(callbacks);
  // The order torch nests events in: by start, the enclosing (longer) one first; of two with one
  // span, the one entered first (External ids count up as ops are entered). In place: a stable
  // sort would need a second copy of the events.
  std::sort(t.cpu.begin(), t.cpu.end(), [](const CpuEvent& a, const CpuEvent& b) {
    return std::tie(a.start_ns, b.end_ns, a.id, a.thread, a.signature) <
           std::tie(b.start_ns, a.end_ns, b.id, b.thread, b.signature);
  });
  return t;
}

}  // namespace

uint32_t Interner::id(std::string_view s) {
  const auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(std::string_view(strings_.back()), id);
  return id;
}

Category category_of(const std::string& cat) {
  // Today's names as written, without a lower-cased copy per event.
  if (cat == "cpu_op") return Category::cpu_op;
  if (cat == "kernel") return Category::kernel;
  if (cat == "cuda_runtime") return Category::cuda_runtime;
  if (cat == "python_function") return Category::python_function;
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

Trace load_trace_text(const std::string& name, const std::string& text, size_t chunk) {
  return load_with(name, [&](const TraceCallbacks& c) { read_trace_text(name, text, c, chunk); });
}

std::string Trace::rank_assumed_because() const {
  if (rank) return "";
  return distributed_info.is_object() ? "distributedInfo without a rank" : "no distributedInfo";
}

}  // namespace tach::analyze
