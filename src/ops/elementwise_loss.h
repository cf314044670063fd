// The losses with one target per output, as transformers' sequence classifiers use them:
// regression's mean squared error (torch.nn.MSELoss) and multi-label classification's binary
// cross-entropy with logits (torch.nn.BCEWithLogitsLoss), both a mean over every element. They
// save nothing: the backward reads the forward's inputs again, and accumulates (+=).
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// pred, target: [N] f32 contiguous (any shape of N elements). Returns mean((pred - target)^2).
double mse_forward(const Tensor& pred, const Tensor& target);
// dpred: [N] += scale * 2 (pred - target) / N
void mse_backward(const Tensor& dpred, const Tensor& pred, const Tensor& target, float scale);

// logits, target (0/1 or soft): [N] f32 contiguous. Returns the mean of the stable form
// max(x, 0) - x y + log1p(exp(-|x|)).
double bce_with_logits_forward(const Tensor& logits, const Tensor& target);
// dlogits: [N] += scale * (sigmoid(x) - y) / N
void bce_with_logits_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& target, float scale);

// The same forwards with the loss left on the inputs' device (no host round trip inside a CUDA
// step): loss is f64 [1] there, written; the step reads it back once (Tensor::to_device).
void mse_forward(const Tensor& loss, const Tensor& pred, const Tensor& target);
void bce_with_logits_forward(const Tensor& loss, const Tensor& logits, const Tensor& target);

OpCost mse_cost(int64_t N, bool backward);
OpCost bce_with_logits_cost(int64_t N, bool backward);

// Kernels (ops/elementwise_loss_cpu.cc): every array [N].
double mse_forward_cpu(const float* pred, const float* target, int64_t N);
void mse_backward_cpu(float* dpred, const float* pred, const float* target, int64_t N, float scale);
double bce_with_logits_forward_cpu(const float* logits, const float* target, int64_t N);
void bce_with_logits_backward_cpu(float* dlogits, const float* logits, const float* target, int64_t N, float scale);

// CUDA kernels (ops/elementwise_loss_cuda.cu, built with the CUDA backend), the CPU's arithmetic
// per element. The forwards sum in double in a fixed order (blocks' partials, a number of them
// set by N alone, then one block), into loss: [1]; partials: [elementwise_loss_partials(N)] scratch.
int64_t elementwise_loss_partials(int64_t N);
void mse_forward_cuda(int device, const float* pred, const float* target, int64_t N, double* partials, double* loss);
void mse_backward_cuda(int device, float* dpred, const float* pred, const float* target, int64_t N, float scale);
void bce_with_logits_forward_cuda(int device, const float* logits, const float* target, int64_t N, double* partials,
                                  double* loss);
void bce_with_logits_backward_cuda(int device, float* dlogits, const float* logits, const float* target, int64_t N,
                                   float scale);

}  // namespace tach::ops
