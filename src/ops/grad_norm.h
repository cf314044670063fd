// The gradient-list ops of an optimizer step, over every trainable parameter's gradient at once:
// the global L2 norm and clipping to it (torch.nn.utils.clip_grad_norm_), and zeroing
// (Optimizer.zero_grad).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// grads: f32 tensors, each contiguous, all on one device; undefined entries are skipped.

// The L2 norm over every element of every tensor, as one vector. Span "grad_norm".
double grad_norm(const std::vector<Tensor>& grads);
// Multiplies every gradient by min(1, max_norm / (norm + 1e-6)), as torch does (nothing moves
// when the norm is within the limit). Span "clip_grad_norm".
void clip_grads_to_norm(const std::vector<Tensor>& grads, double norm, double max_norm);
// Every gradient to 0 (they accumulate with += over a step's micro-batches). Span "zero_grad".
void zero_grads(const std::vector<Tensor>& grads);

OpCost grad_norm_cost(int64_t elements);   // a sum of squares: 2 flops and 4 bytes per element
OpCost clip_grads_cost(int64_t elements);  // a scale in place
OpCost zero_grads_cost(int64_t elements);  // 4 bytes written per element

// Kernels (ops/grad_norm_cpu.cc).
// grads: one (pointer, count) per gradient. Fixed chunks of 64K elements, each summed in double in
// four fixed partial sums, in parallel, then added in chunk order: the same bits whatever the
// thread count.
using GradSpans = std::vector<std::pair<float*, int64_t>>;
double grad_norm_cpu(const GradSpans& grads);
// g: [n] *= coef, in parallel.
void scale_cpu(float* g, int64_t n, float coef);

}  // namespace tach::ops
