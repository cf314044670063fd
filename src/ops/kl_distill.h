// Knowledge distillation's soft-target loss (Hinton, Vinyals and Dean 2015): the KL divergence
// from the teacher's softened distribution to the student's, scaled by T² so that its gradients
// keep their size as the temperature T changes:
//   loss = T² · mean over the counted groups g of Σ_c p_c (log p_c - log q_c),
//   p = softmax(teacher_g / T), q = softmax(student_g / T)
// (torch: F.kl_div(F.log_softmax(s / T), F.softmax(t / T), reduction="sum") * T² / groups).
// A group is one distribution: a classifier's row, a token's row over its labels or the
// vocabulary, or question answering's start (or end) logits over a row's tokens. The forward saves
// nothing: the backward reads both logits again, and accumulates (+=).
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// Where the distributions lie in the logits, viewed as [outer, classes, inner]: the softmax runs
// over `classes`, one group per (outer, inner). A row-major [R, C] is {R, C, 1}; question
// answering's [B, T, 2] (start, end) is {B, T, 2}: 2B groups over T tokens.
struct SoftmaxGroups {
  int64_t outer = 0, classes = 0, inner = 1;
  int64_t groups() const { return outer * inner; }
  int64_t numel() const { return outer * classes * inner; }
};

// student, teacher: [outer, classes, inner] f32 contiguous, on one device. labels: [groups] i32, a
// group labelled -100 (kIgnoreIndex) taking no loss; undefined: every group counts.
// temperature > 0. Returns the loss above (0 when no group counts).
double kl_distill_forward(const Tensor& student, const Tensor& teacher, const Tensor& labels, SoftmaxGroups g,
                          float temperature);
// The same, left on the inputs' device (no host round trip inside a CUDA step): loss f64 [1] there.
void kl_distill_forward(const Tensor& loss, const Tensor& student, const Tensor& teacher, const Tensor& labels,
                        SoftmaxGroups g, float temperature);
// dstudent: [outer, classes, inner] += scale * T * (q - p) / counted groups (d loss / d student).
void kl_distill_backward(const Tensor& dstudent, const Tensor& student, const Tensor& teacher, const Tensor& labels,
                         SoftmaxGroups g, float temperature, float scale);

OpCost kl_distill_cost(SoftmaxGroups g, bool backward);

// Kernels (ops/kl_distill_cpu.cc), raw pointers; labels may be null (every group counts).
double kl_distill_forward_cpu(const float* student, const float* teacher, const int32_t* labels, SoftmaxGroups g,
                              float temperature);
void kl_distill_backward_cpu(float* dstudent, const float* student, const float* teacher, const int32_t* labels,
                             SoftmaxGroups g, float temperature, float scale);

// CUDA kernels (ops/kl_distill_cuda.cu, built with the CUDA backend): one block per group, the
// CPU's arithmetic (exp and log in double). The forward writes each group's term into
// partials: [groups] f64 scratch, then one block sums them in a fixed order into loss: [1].
void kl_distill_forward_cuda(int device, const float* student, const float* teacher, const int32_t* labels,
                             SoftmaxGroups g, float temperature, double* partials, double* loss);
void kl_distill_backward_cuda(int device, float* dstudent, const float* student, const float* teacher,
                              const int32_t* labels, SoftmaxGroups g, float temperature, float scale);

}  // namespace tach::ops
