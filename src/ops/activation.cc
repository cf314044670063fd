#include "ops/activation.h"

namespace tach::ops {

OpCost activation_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = double(n) * 4;
  c.bytes_written = double(n) * 4;
  return c;
}

OpCost activation_backward_cost(int64_t n) {
  OpCost c;
  c.flops = double(n) * 3;
  c.bytes_read = double(n) * 12;
  c.bytes_written = double(n) * 4;
  return c;
}

}  // namespace tach::ops
