// Dropout with a counter-based generator: whether element i is kept is a hash of (key, i), so
// the backward recomputes the mask instead of storing it, the result does not depend on the
// thread count, and a resumed run draws exactly the masks the uninterrupted run drew.
// Training only: inference never calls it (transformers' eval mode is the identity).
#pragma once

#include <cstdint>

#include "ops/dropout_mask.h"
#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// A mask's identity: the run's seed, the micro-batch and the site (which dropout in the model).
uint64_t dropout_key(uint64_t seed, int64_t micro_batch, int64_t site);

// out[j] = in[j] * keep(first_index + j) / (1 - p), j < n. out may alias in. p = 0 copies.
void dropout_apply(float* out, const float* in, int64_t n, float p, uint64_t key, int64_t first_index);

// The op "dropout": out = x * keep / (1 - p), the mask drawn with `key` over the elements in
// order. x, out: the same number of f32 elements, contiguous, on one device; out may be x. Saves
// nothing: the backward draws the mask again from the key. p = 0 is the identity: in place
// nothing runs (no span), out of place a copy.
void dropout_forward(const Tensor& out, const Tensor& x, float p, uint64_t key);
// "dropout_backward": dx = dout * keep / (1 - p), the forward's mask; dx may be dout.
void dropout_backward(const Tensor& dx, const Tensor& dout, float p, uint64_t key);

// Kernels.
// out = x * keep / (1 - p), elementwise over n (indices from 0), across threads. out may alias x.
void dropout_forward_cpu(float* out, const float* x, int64_t n, float p, uint64_t key);
// dx = dout * keep / (1 - p), the same mask. dx may alias dout.
void dropout_backward_cpu(float* dx, const float* dout, int64_t n, float p, uint64_t key);
// CUDA kernel (ops/dropout_cuda.cu), either direction on tach's stream of `device`: out = in * keep
// / (1 - p) over n elements (indices from 0), the mask of dropout_keeps_at. out may alias in; p = 0
// copies.
void dropout_cuda(int device, float* out, const float* in, int64_t n, float p, uint64_t key);

OpCost dropout_cost(int64_t n);

}  // namespace tach::ops
