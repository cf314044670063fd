// Work queued on a device, captured once and replayed as one launch: a CUDA graph of tach's
// stream. Decoding runs the same few hundred kernels at every step; launched one by one, each
// costs the host microseconds while the GPU waits, and replayed from a graph they start back to
// back. The work must not synchronise, copy to or from the host, or allocate (the capture would
// fail, or own memory the replays then reuse): everything it touches is allocated beforehand,
// and values that change between replays are read by the kernels from device memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "tach/device.h"

namespace tach::core {

class StreamGraph {
 public:
  // Whether `device` can capture (a CUDA device in a build with the backend).
  static bool supported(Device device);
  // Runs `work` with the device's stream in capture mode (its kernels are recorded, not run) and
  // instantiates the graph. Throws tach::Error, naming what the work did, when it cannot be captured.
  StreamGraph(Device device, const std::function<void()>& work);
  ~StreamGraph();
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;

  // Queues one run of the captured work on the device's stream; returns without waiting.
  void replay() const;
  // The kernels, copies and other nodes one replay runs.
  int64_t nodes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tach::core
