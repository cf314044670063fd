// GELU's cost; the kernels are in gelu_cpu.cc (training calls them directly until the op
// contract with tensors and spans lands for the training path).
#include "ops/gelu.h"

namespace tach::ops {

OpCost gelu_cost(int64_t n) {
  OpCost c;
  c.flops = double(n) * 8;  // erf counted as a few FLOPs, as the fused path counts it
  c.bytes_read = double(n) * 4;
  c.bytes_written = double(n) * 4;
  return c;
}

OpCost gelu_backward_cost(int64_t n) {
  OpCost c;
  c.flops = double(n) * 14;
  c.bytes_read = double(n) * 12;  // x, dout, and dx (accumulated)
  c.bytes_written = double(n) * 4;
  return c;
}

}  // namespace tach::ops
