// The stream every tach kernel of a device runs on, and events to time it.
//
// One non-blocking stream per device, created on first use: kernels, cuBLASLt calls, pool
// allocations and copies are all ordered on it, so a forward needs no synchronisation inside
// and `synchronize(device)` waits for exactly tach's work.
#pragma once

#include <cuda_runtime.h>

namespace tach::cuda {

// Makes `device` current on the calling thread and returns tach's stream on it.
cudaStream_t stream(int device);

// The device's streaming multiprocessors (read once): what launchers size one wave of blocks by.
int multiprocessors(int device);

// Sets the calling thread's current device for the guard's lifetime (CUDA's current device is
// per thread; callers of tach may use another one).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// A CUDA event on tach's stream of a device. elapsed_ms waits for `end` and returns the GPU time
// between the two records (CUDA's resolution: about 0.5 us).
class Event {
 public:
  explicit Event(int device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record();
  void wait() const;
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace tach::cuda
