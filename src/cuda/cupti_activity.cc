#include "cuda/cupti_activity.h"

#include <cupti.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/symbol_name.h"
#include "core/library_loader.h"
#include "tach/device.h"
#include "tach/error.h"

namespace tach::cuda {
namespace {

constexpr size_t kBufferBytes = size_t(8) << 20;

// Records land in buffers CUPTI asks for and hands back, from its own thread.
struct Collected {
  std::mutex mu;
  std::vector<std::pair<GpuActivity, uint32_t>> activities;     // with the launch's correlation id
  std::unordered_map<uint32_t, int64_t> launch_by_correlation;  // runtime call's host start (CUPTI clock)
  int64_t clock_offset_ns = 0;                                  // steady clock minus CUPTI's clock, measured at start
  int64_t dropped = 0;
};
Collected& collected() {
  static Collected c;
  return c;
}

// CUPTI's entry points, resolved at the first GPU profile (core/library_loader.h says why not linked).
struct CuptiApi {
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
};

struct LoadedCupti {
  CuptiApi api;
  std::string error;  // empty when usable
};

const LoadedCupti& loaded_cupti() {
  static LoadedCupti state;
  static std::once_flag once;
  std::call_once(once, [] {
    const OpenedLibrary lib =
        open_library({TACH_CUPTI_SONAME, TACH_CUPTI_TOOLKIT_PATH, "the CUDA toolkit tach was built with",
                      "GPU activity in profiles", kCudaLibraryRemedy});
    if (!lib.handle) {
      state.error = "CUPTI is not available: " + lib.error;
      return;
    }
    std::string missing;
    CuptiApi& a = state.api;
    resolve(lib.handle, a.result_string, "cuptiGetResultString", &missing);
    resolve(lib.handle, a.timestamp, "cuptiGetTimestamp", &missing);
    resolve(lib.handle, a.register_callbacks, "cuptiActivityRegisterCallbacks", &missing);
    resolve(lib.handle, a.enable, "cuptiActivityEnable", &missing);
    resolve(lib.handle, a.disable, "cuptiActivityDisable", &missing);
    resolve(lib.handle, a.flush_all, "cuptiActivityFlushAll", &missing);
    resolve(lib.handle, a.next_record, "cuptiActivityGetNextRecord", &missing);
    resolve(lib.handle, a.dropped_records, "cuptiActivityGetNumDroppedRecords", &missing);
    if (!missing.empty()) state.error = std::string("CUPTI is not usable: ") + TACH_CUPTI_SONAME + " lacks " + missing;
  });
  return state;
}

// Only called once loaded_cupti() has no error (start() checks it first).
const CuptiApi& cupti() { return loaded_cupti().api; }

void check_cupti(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cupti().result_string(r, &msg);
  throw Error(std::string("CUPTI ") + what + ": " + (msg ? msg : "error " + std::to_string(int(r))));
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

const char* copy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    default: return "memcpy";
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mu);
  CUpti_Activity* record = nullptr;
  const auto to_steady = [&](uint64_t t) { return int64_t(t) + c.clock_offset_ns; };
  while (cupti().next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    GpuActivity a;
    uint32_t correlation = 0;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        a.kind = "kernel";
        a.name = k->name ? core::readable_kernel_name(k->name) : "?";
        a.device = k->deviceId, a.stream = k->streamId;
        a.start_ns = to_steady(k->start), a.end_ns = to_steady(k->end);
        correlation = k->correlationId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        a.kind = "memcpy";
        a.name = copy_kind_name(m->copyKind);
        a.device = m->deviceId, a.stream = m->streamId, a.bytes = int64_t(m->bytes);
        a.start_ns = to_steady(m->start), a.end_ns = to_steady(m->end);
        correlation = m->correlationId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        a.kind = "memset";
        a.name = "memset";
        a.device = m->deviceId, a.stream = m->streamId, a.bytes = int64_t(m->bytes);
        a.start_ns = to_steady(m->start), a.end_ns = to_steady(m->end);
        correlation = m->correlationId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        c.launch_by_correlation[api->correlationId] = to_steady(api->start);
        continue;
      }
      default: continue;
    }
    // The launch's host time is joined at stop(): the runtime record may come in a later buffer.
    c.activities.emplace_back(std::move(a), correlation);
  }
  size_t dropped = 0;
  cupti().dropped_records(nullptr, 0, &dropped);
  c.dropped += int64_t(dropped);
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER};

}  // namespace

std::string ActivityCollector::unavailable_reason() {
  if (!cuda_available()) return cuda_unavailable_reason();
  return loaded_cupti().error;
}

void ActivityCollector::start() {
  check(!running_, "the GPU activity collector is already running");
  const std::string why = unavailable_reason();
  check(why.empty(), "GPU activity: " + why);
  Collected& c = collected();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.activities.clear();
    c.launch_by_correlation.clear();
    c.dropped = 0;
    uint64_t cupti_now = 0;
    check_cupti(cupti().timestamp(&cupti_now), "cuptiGetTimestamp");
    c.clock_offset_ns = steady_now_ns() - int64_t(cupti_now);
  }
  check_cupti(cupti().register_callbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  for (CUpti_ActivityKind k : kKinds) check_cupti(cupti().enable(k), "cuptiActivityEnable");
  running_ = true;
}

std::vector<GpuActivity> ActivityCollector::stop(int64_t* dropped) {
  if (dropped) *dropped = 0;
  if (!running_) return {};
  running_ = false;
  cupti().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) cupti().disable(k);
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mu);
  std::vector<GpuActivity> out;
  out.reserve(c.activities.size());
  for (auto& [a, correlation] : c.activities) {
    const auto it = c.launch_by_correlation.find(correlation);
    a.launch_ns = it == c.launch_by_correlation.end() ? -1 : it->second;
    out.push_back(std::move(a));
  }
  c.activities.clear();
  if (dropped) *dropped = c.dropped;
  return out;
}

}  // namespace tach::cuda
