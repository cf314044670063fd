#include "ops/dropout.h"

namespace tach::ops {

namespace {

// splitmix64's finaliser: spreads (seed, micro-batch, site) over all 64 bits of the key.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t dropout_key(uint64_t seed, int64_t micro_batch, int64_t site) {
  return mix64(mix64(seed * 0x9e3779b97f4a7c15ull + uint64_t(micro_batch)) + uint64_t(site) * 0xd1b54a32d192ed03ull);
}

OpCost dropout_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = double(n) * 4;
  c.bytes_written = double(n) * 4;
  return c;
}

}  // namespace tach::ops
