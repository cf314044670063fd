// Dropout with a counter-based generator: whether element i is kept is a hash of (key, i), so
// the backward recomputes the mask instead of storing it, the result does not depend on the
// thread count, and a resumed run draws exactly the masks the uninterrupted run drew.
// Training only: inference never calls it (transformers' eval mode is the identity).
#pragma once

#include <cstdint>

#include "ops/op_cost.h"

namespace tach::ops {

// A mask's identity: the run's seed, the micro-batch and the site (which dropout in the model).
uint64_t dropout_key(uint64_t seed, int64_t micro_batch, int64_t site);

// True when element i survives (probability 1 - p).
bool dropout_keeps(uint64_t key, int64_t i, float p);

// out = x * keep / (1 - p), elementwise over n. out may alias x. p = 0 copies.
void dropout_forward_cpu(float* out, const float* x, int64_t n, float p, uint64_t key);
// dx = dout * keep / (1 - p), the same mask. dx may alias dout.
void dropout_backward_cpu(float* dx, const float* dout, int64_t n, float p, uint64_t key);

OpCost dropout_cost(int64_t n);

}  // namespace tach::ops
