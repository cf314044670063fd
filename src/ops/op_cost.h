// What an op costs, declared by the op from its arguments. The profiler's roofline verdicts
// and the achieved-GFLOP/s figures read these; they count useful work, not what a kernel
// happens to execute (a padded position still counts, since the kernel really computes it).
#pragma once

#include <cstdint>

namespace tach::ops {

struct OpCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;

  OpCost& operator+=(const OpCost& o) {
    flops += o.flops;
    bytes_read += o.bytes_read;
    bytes_written += o.bytes_written;
    return *this;
  }
  double bytes() const { return bytes_read + bytes_written; }
  // FLOPs per byte moved: against the machine's balance point this says compute- or memory-bound.
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0; }
};

}  // namespace tach::ops
