// AdamW as torch.optim.AdamW (decoupled weight decay, bias correction) over a list of tensors at
// once, as PyTorch's multi-tensor (foreach) AdamW: the optimizer lists every trainable parameter
// with its gradient and moments once, and one call updates them all.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

struct AdamWConfig {
  float lr = 1e-3f;  // the schedule's value for this step
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;  // torch's default; applied only to the tensors listed with decay
};

// The tensors one update walks, listed once (the optimizer keeps this) so that a step allocates
// nothing: param, grad, m, v of entry i share one shape, f32, contiguous, on one device.
struct AdamWTensors {
  std::vector<Tensor> params, grads, m, v;
  std::vector<bool> decay;  // weight decay applies to params[i] (not biases and norm weights, as the Trainer)
  // The multi-tensor schedule: every tensor cut into pieces of at most kChunk elements, updated in
  // parallel (one CUDA launch, one block per chunk); each element sees torch's single-tensor
  // arithmetic. The gradient norm for clipping walks the same chunks (ops/grad_norm.h).
  static constexpr int64_t kChunk = 1 << 16;
  struct Chunk {
    size_t tensor;
    int64_t begin, end;
  };
  std::vector<Chunk> chunks;
  int64_t elements = 0;  // Σ numel
  // CUDA: the chunks' pointers, uploaded at the first update on the device and kept (a step then
  // uploads nothing); uploaded again when the listed tensors' storage changed.
  struct DeviceChunk {
    float* param;
    const float* grad;
    float* m;
    float* v;
    int64_t n;
    int64_t decay;  // 1: weight decay applies (an int64 keeps the record free of padding)
  };
  mutable std::vector<DeviceChunk> device_chunks_host;
  mutable Tensor device_chunks;  // u8 [chunks * sizeof(DeviceChunk)] on the parameters' device

  // The chunk records on `device` (CUDA builds only; uploaded again only when a listed tensor's
  // storage moved): what the update's and the gradient norm's single launches read.
  const DeviceChunk* device_records(Device device) const;
  void add(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, bool decay);
  size_t size() const { return params.size(); }
};

// Clipping by the global gradient norm, applied as the update reads each gradient (no pass of its
// own over the gradients, and on a GPU no host round trip): norm is f64 [1] on the parameters'
// device, as grad_norm(tensors, norm) writes it. Each gradient is read as
// g * clip_coefficient(norm, max_norm) (max_norm <= 0: g as it is), the very product
// clip_grads_to_norm would store; a norm that is not finite updates nothing (the step is skipped,
// not clipped to zero). The gradients in memory keep their unclipped values.
struct AdamWClip {
  Tensor norm;  // undefined: no clipping, every update runs
  double max_norm = 0;
};

// One update of every listed tensor; step counts from 1 (bias correction uses it).
//   param -= lr * weight_decay * param             (decoupled, before the moment update)
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   param -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// One multi-tensor pass over every chunk (PyTorch's foreach form: one CUDA launch, the chunks in
// parallel on the CPU) and one span with the cost of every element. fused names the span only
// (--exec fused: "adamw_fused", eager: "adamw") so that a profile says which execution ran; the
// work and the numbers are the same, equal bit for bit to a per-tensor pass (adamw_update_cpu).
void adamw_update(const AdamWTensors& tensors, int64_t step, const AdamWConfig& config, bool fused,
                  const AdamWClip& clip = {});
// Per element: ~12 flops; reads param, grad, m and v, writes param, m and v.
OpCost adamw_cost(int64_t elements);

// The per-step scalars of the update, computed once by the CPU kernel and the CUDA launcher alike
// (one compiled function: both sides multiply by the same bits).
struct AdamWScalars {
  float step_size;  // lr / (1 - beta1^step)
  float keep;       // 1 - lr * weight_decay where weight decay applies, else 1
  float b1, b2, eps;
  float inv_bc2;  // 1 / sqrt(1 - beta2^step)
};
AdamWScalars adamw_scalars(int64_t step, const AdamWConfig& c, bool decay);

// Kernels (ops/adamw_cpu.cc). param, grad, m, v: [n]; decay false also when weight_decay is 0;
// each gradient is read as grad[i] * grad_scale (the clip's coefficient; 1: as it is).
void adamw_update_cpu(float* param, const float* grad, float* m, float* v, int64_t n, int64_t step,
                      const AdamWConfig& c, bool decay, float grad_scale = 1.0f);
// Every chunk of `tensors`, in parallel on the thread pool.
void adamw_update_chunks_cpu(const AdamWTensors& tensors, int64_t step, const AdamWConfig& c, float grad_scale);
// CUDA kernel (ops/adamw_cuda.cu, built with the CUDA backend): the CPU's arithmetic, one element
// per thread, in one launch over `count` device chunk records (the multi-tensor update); s from
// adamw_scalars with decay true (records without decay keep 1). norm: null, or the f64 [1] global
// gradient norm on the device, read there as AdamWClip says with max_norm.
void adamw_update_cuda(int device, const AdamWTensors::DeviceChunk* chunks, int64_t count, const AdamWScalars& s,
                       const double* norm, double max_norm);

}  // namespace tach::ops
