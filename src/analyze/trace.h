// One torch.profiler trace, kept as compact records: what the analyses need of each event, with
// names, shapes and whatever else events repeat stored once, so a trace costs 32 to 48 bytes per
// event rather than its JSON.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace tach::analyze {

// Strings seen many times (op and kernel names, shape lists) stored once.
class Interner {
 public:
  Interner() = default;
  Interner(Interner&&) = default;  // the deque's strings stay where they are: the views hold
  Interner& operator=(Interner&&) = default;
  Interner(const Interner&) = delete;  // a copy's views would see the original's strings
  Interner& operator=(const Interner&) = delete;
  uint32_t id(std::string_view s);
  const std::string& str(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // never moved: the keys below view them
  std::unordered_map<std::string_view, uint32_t> ids_;
};

// The categories torch.profiler writes (from 1.13 to 2.x), by the "cat" field.
enum class Category : uint8_t {
  cpu_op,           // an ATen op or other RECORD_FUNCTION ("Operator" in 1.x traces)
  user_annotation,  // record_function(), ProfilerStep#N, DataLoader and Optimizer spans, c10d works
  python_function,  // with_stack: a Python frame
  cuda_runtime,     // cudaLaunchKernel and other runtime calls (hipLaunchKernel on ROCm)
  cuda_driver,      // cuLaunchKernel and other driver calls
  kernel,           // a GPU kernel
  gpu_memcpy,
  gpu_memset,
  gpu_user_annotation,
  other
};
Category category_of(const std::string& cat);
bool on_device(Category c);  // kernel, gpu_memcpy, gpu_memset, gpu_user_annotation

// What many CPU events share, stored once: the op's name, input shapes and types, FLOPs and kind.
// A trace repeats a few thousand of these over millions of events.
struct Signature {
  uint32_t name = 0;    // interned
  uint32_t shapes = 0;  // interned "[[64, 32], [32, 96]]", as torch prints input_shapes
  uint32_t types = 0;   // interned "[float, float]" from "Input type"
  int64_t flops = 0;    // the "flops" argument where the trace has one, else torch's formula (torch_flops.h)
  Category category = Category::cpu_op;
  // Started on one thread and ended on another: c10d's collective works (gloo:, nccl:, ...) are
  // recorded that way, and torch leaves them out of the nesting and of self times.
  bool is_async = false;
  bool operator==(const Signature& o) const {
    return name == o.name && shapes == o.shapes && types == o.types && flops == o.flops && category == o.category &&
           is_async == o.is_async;
  }
};

// A complete ("X") event on a CPU thread: 32 bytes. Times in ns from the trace's own clock
// (µs × 1000).
struct CpuEvent {
  int64_t start_ns = 0, end_ns = 0;
  // Runtime and driver calls: the CUPTI correlation id of what they launched. Other events: their
  // "External id", the op's correlation id, which its kernels carry.
  int64_t id = 0;
  uint32_t signature = 0;  // Trace::signatures
  uint32_t thread = 0;     // Trace::threads
};

// A kernel, copy or set on a GPU stream: 48 bytes.
struct DeviceEvent {
  int64_t start_ns = 0, end_ns = 0;
  int64_t external_id = 0, correlation = 0;
  uint32_t name = 0;
  uint32_t stream = 0;  // Trace::streams
  Category category = Category::kernel;
};

// A "[memory]" instant event (profile_memory): an allocation (bytes > 0) or a free (bytes < 0).
struct MemoryEvent {
  int64_t ts_ns = 0;
  int64_t bytes = 0, total_allocated = 0;
  int device_type = 0;  // c10::DeviceType: 0 CPU, 1 CUDA, 2 MKLDNN, 5 IDEEP, ...
};

// What is kept of a trace grows with its events as these records (32 bytes a CPU event, 48 a GPU
// event, 32 a [memory] event) in blocks that grow without copying, plus the distinct strings and
// signatures. The JSON itself is never held (trace_reader.h).
struct Trace {
  std::string path;
  Interner strings;
  std::vector<Signature> signatures;
  std::vector<int64_t> threads;                      // the tid of each CpuEvent::thread
  std::vector<std::pair<int64_t, int64_t>> streams;  // (device, stream) of each DeviceEvent::stream
  // Sorted by start, the longer first where two start together (the order torch nests them in).
  std::deque<CpuEvent> cpu;        // cpu_op, user_annotation, python_function, runtime, driver
  std::deque<DeviceEvent> device;  // kernels, copies, sets, in the file's order
  std::deque<MemoryEvent> memory;
  std::unordered_map<int64_t, std::string> thread_names;
  int64_t flow_events = 0;  // ac2g flows seen (the correlation ids carry the same links)
  // Header fields.
  std::optional<int> rank;  // distributedInfo.rank; unset when the trace has none
  int world_size = 1;
  std::string backend;  // distributedInfo.backend
  nlohmann::json device_properties = nlohmann::json::array();
  nlohmann::json distributed_info;
  bool with_flops = false, record_shapes = false, profile_memory = false, with_stack = false;
  int64_t base_time_ns = 0;  // baseTimeNanoseconds: the clock offset torch recorded, where present
  std::string schema_version;

  // Why rank 0 is assumed: "no distributedInfo" or "distributedInfo without a rank" (a
  // process group's info written before its rank was known); "" when the trace names its rank.
  std::string rank_assumed_because() const;

  const Signature& signature(const CpuEvent& e) const { return signatures[e.signature]; }
  const std::string& name(const CpuEvent& e) const { return strings.str(signatures[e.signature].name); }
  Category category(const CpuEvent& e) const { return signatures[e.signature].category; }
  int64_t tid(const CpuEvent& e) const { return threads[e.thread]; }
};

// Reads one trace file into compact records (streaming: see trace_reader.h).
Trace load_trace(const std::string& path);
// The same from JSON text (tests, fuzzing), given to the reader chunk bytes at a time.
Trace load_trace_text(const std::string& name, const std::string& text, size_t chunk = SIZE_MAX);

}  // namespace tach::analyze
