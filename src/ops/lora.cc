#include "ops/lora.h"

namespace tach::ops {

OpCost lora_cost(const LoraShape& s) {
  OpCost c;
  c.flops = 2.0 * double(s.M) * double(s.r) * double(s.K + s.N);
  c.bytes_read = 4.0 * (double(s.M) * double(s.K) + double(s.r) * double(s.K + s.N) + double(s.M) * double(s.N));
  c.bytes_written = 4.0 * (double(s.M) * double(s.r) + double(s.M) * double(s.N));
  return c;
}

OpCost lora_backward_cost(const LoraShape& s, bool needs_dx) {
  OpCost c;
  // dB, dxa, dA and (needs_dx) dx: GEMMs with the rank as one dimension.
  c.flops = 2.0 * double(s.M) * double(s.r) * double(2 * s.N + (needs_dx ? 2 : 1) * s.K);
  c.bytes_read = 4.0 * (2.0 * double(s.M) * double(s.K) + double(s.M) * double(s.N) + double(s.r) * double(s.K + s.N));
  c.bytes_written = 4.0 * (double(s.M) * double(s.K) + double(s.r) * double(s.K + s.N));
  return c;
}

}  // namespace tach::ops
