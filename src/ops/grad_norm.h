// The gradient-list ops of an optimizer step, over every trainable parameter's gradient at once:
// the global L2 norm and clipping to it (torch.nn.utils.clip_grad_norm_), and zeroing
// (Optimizer.zero_grad).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ops/adamw.h"
#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// grads: f32 tensors, each contiguous, all on one device; undefined entries are skipped.

// The L2 norm over every element of every tensor, as one vector. Span "grad_norm".
double grad_norm(const std::vector<Tensor>& grads);
// Multiplies every gradient by min(1, max_norm / (norm + 1e-6)), as torch does (nothing moves
// when the norm is within the limit). Span "clip_grad_norm".
void clip_grads_to_norm(const std::vector<Tensor>& grads, double norm, double max_norm);
// The same two on the gradients' device with the norm left there (no host round trip: a CUDA step
// reads the norm back once, with its loss): norm is f64 [1], written; the clip reads it on the
// device, as the form above would with its value.
void grad_norm(const std::vector<Tensor>& grads, const Tensor& norm);
void clip_grads_to_norm(const std::vector<Tensor>& grads, const Tensor& norm, double max_norm);
// The norm over the gradients an AdamW update lists (tensors.grads, every one defined) into norm
// (f64 [1] on their device): the clipping step's form, one multi-tensor reduction over the update's
// own chunk records (on CUDA one launch, one block per 64K chunk, then a fixed-order total: two
// launches in all and the same bits every run; on the CPU grad_norm_cpu, the bits of the list
// form). adamw_update reads the norm where it lies (AdamWClip). Span "grad_norm".
void grad_norm(const AdamWTensors& tensors, const Tensor& norm);
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
// The clip's factor for a norm: min(1, max_norm / (norm + 1e-6)) as std::min takes it (a NaN
// norm gives 1: nothing moves), rounded to f32. Host and device (the CUDA clip reads the norm there).
#ifdef __CUDACC__
__host__ __device__
#endif
    inline float
    clip_coefficient(double norm, double max_norm) {
  const double ratio = max_norm / (norm + 1e-6);
  return float(ratio < 1.0 ? ratio : 1.0);
}

// CUDA kernels (ops/grad_norm_cuda.cu, built with the CUDA backend). Chunks of 64K elements as on
// the CPU, each summed in double by one block in a fixed tree order:
// partials: [ceil(n / 64K)] written with g's chunk sums.
void grad_norm_partials_cuda(int device, const float* g, int64_t n, double* partials);
// The multi-tensor form: partials: [count] written with the sum of squares of chunk k's gradient
// (records from AdamWTensors::device_records, each at most 64K elements).
void grad_norm_chunks_cuda(int device, const AdamWTensors::DeviceChunk* chunks, int64_t count, double* partials);
// norm: [1] = sqrt(Σ partials), summed in a fixed order.
void grad_norm_finish_cuda(int device, const double* partials, int64_t count, double* norm);
// g: [n] *= coef; the second reads coef = clip_coefficient(*norm, max_norm) on the device.
void scale_cuda(int device, float* g, int64_t n, float coef);
void clip_by_norm_cuda(int device, float* g, int64_t n, const double* norm, double max_norm);
inline constexpr int64_t kGradNormChunk = 1 << 16;

}  // namespace tach::ops
