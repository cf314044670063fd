// One torch.profiler trace, kept as compact records: what the analyses need of each event, with
// names and shapes interned, so a trace costs tens of bytes per event rather than its JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace tach::analyze {

// Strings seen many times (op and kernel names, shape lists) stored once.
class Interner {
 public:
  uint32_t id(const std::string& s);
  const std::string& str(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> strings_;
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

// A complete ("X") event on a CPU thread. Times in ns from the trace's own clock (µs × 1000).
struct CpuEvent {
  int64_t start_ns = 0, end_ns = 0;
  int64_t tid = 0;
  int64_t external_id = 0;  // "External id": the op's correlation id, which its kernels carry
  int64_t correlation = 0;  // runtime calls: the CUPTI correlation id of what they launched
  int64_t flops = 0;        // the "flops" argument where the trace has one, else torch's formula (torch_flops.h)
  uint32_t name = 0;        // interned
  uint32_t shapes = 0;      // interned "[[64, 32], [32, 96]]", as torch prints input_shapes
  uint32_t types = 0;       // interned "[float, float]" from "Input type"
  Category category = Category::cpu_op;
  // Started on one thread and ended on another: c10d's collective works (gloo:, nccl:, ...) are
  // recorded that way, and torch leaves them out of the nesting and of self times.
  bool is_async = false;
};

// A kernel, copy or set on a GPU stream.
struct DeviceEvent {
  int64_t start_ns = 0, end_ns = 0;
  int64_t device = 0, stream = 0;
  int64_t external_id = 0, correlation = 0;
  uint32_t name = 0;
  Category category = Category::kernel;
};

// A "[memory]" instant event (profile_memory): an allocation (bytes > 0) or a free (bytes < 0).
struct MemoryEvent {
  int64_t ts_ns = 0;
  int64_t bytes = 0, total_allocated = 0, total_reserved = 0;
  int device_type = 0;  // c10::DeviceType: 0 CPU, 1 CUDA, 2 MKLDNN, 5 IDEEP, ...
  int device_id = -1;
};

struct Trace {
  std::string path;
  Interner strings;
  std::vector<CpuEvent> cpu;        // cpu_op, user_annotation, python_function, runtime, driver
  std::vector<DeviceEvent> device;  // kernels, copies, sets
  std::vector<MemoryEvent> memory;
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
};

// Reads one trace file into compact records (streaming: see trace_reader.h).
Trace load_trace(const std::string& path);
// The same from JSON text (tests, fuzzing).
Trace load_trace_text(const std::string& name, const std::string& text);

}  // namespace tach::analyze
