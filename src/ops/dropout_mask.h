// Dropout's keep/drop decision, shared by the CPU kernels and the CUDA ones (compiled by nvcc as
// __host__ __device__), so that a step on either device draws exactly the same mask for a key.
// Element i is kept when 24 bits of a 32-bit hash of (key, i) reach round(p * 2^24): p takes
// effect rounded to a multiple of 2^-24 (6e-8). The hash (two rounds of a 32-bit multiply-xorshift
// mixer, the key folded in between) is branch-free 32-bit arithmetic, so mask loops vectorise.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define TACH_HOST_DEVICE __host__ __device__
#else
#define TACH_HOST_DEVICE
#endif

namespace tach::ops {

// Computed once per call on the host; kernels take the threshold.
inline uint32_t dropout_threshold(float p) { return static_cast<uint32_t>(std::lround(double(p) * 16777216.0)); }

TACH_HOST_DEVICE inline uint32_t dropout_mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  return h ^ (h >> 16);
}

TACH_HOST_DEVICE inline bool dropout_keeps_at(uint64_t key, int64_t i, uint32_t threshold) {
  const uint32_t idx = static_cast<uint32_t>(i) ^ (static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32) * 0x9e3779b9u);
  const uint32_t h = dropout_mix32(dropout_mix32(idx ^ static_cast<uint32_t>(key)) + static_cast<uint32_t>(key >> 32));
  return (h >> 8) >= threshold;
}

inline bool dropout_keeps(uint64_t key, int64_t i, float p) { return dropout_keeps_at(key, i, dropout_threshold(p)); }

}  // namespace tach::ops
