// Cross-entropy over rows of logits (torch.nn.functional.cross_entropy, mean reduction, rows
// labelled kIgnoreIndex left out): a sequence classifier's rows, a token classifier's tokens, a
// masked LM's vocabulary-wide rows, and question answering's start and end logits.
// The forward saves each row's softmax for the backward; the backward accumulates (+=).
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

inline constexpr int32_t kIgnoreIndex = -100;  // torch.nn.CrossEntropyLoss's default ignore_index

// logits: [R, L] f32 contiguous  labels: [R] i32 in [0, L) or kIgnoreIndex  probs: [R, L] f32
// (written: the softmax, saved for the backward). Returns the mean over the rows not ignored (0
// when every row is ignored, as no gradient flows). A label outside [0, L) is an error.
double cross_entropy_forward(const Tensor& probs, const Tensor& logits, const Tensor& labels);
// dlogits: [R, L] += scale * (probs - onehot(labels)) / rows counted (ignored rows unchanged)
void cross_entropy_backward(const Tensor& dlogits, const Tensor& probs, const Tensor& labels, float scale);

// Question answering (…ForQuestionAnswering): logits [B * T, 2] f32 contiguous, each token's
// (start, end) pair; start, end: [B] i32 in [0, T) or kIgnoreIndex (the caller clamps as
// transformers does); probs: [2, B, T] f32 (written: the start and the end softmax over each
// row's T tokens). Returns (CE(start logits, start) + CE(end logits, end)) / 2.
double span_cross_entropy_forward(const Tensor& probs, const Tensor& logits, const Tensor& start, const Tensor& end);
// dlogits: [B * T, 2] += the gradient of that mean, times scale (each half at scale / 2)
void span_cross_entropy_backward(const Tensor& dlogits, const Tensor& probs, const Tensor& start, const Tensor& end,
                                 float scale);

// The same losses left on the logits' device, so that a CUDA step has no host round trip inside:
// loss: f64 [kLossSlots] on that device, written. A step reads it back once, when it wants the
// number, with read_cross_entropy_loss (on the CPU the forms above throw at once instead).
inline constexpr int64_t kLossSlots = 4;  // the mean; the first row with a bad label (or -1); its label; L
void cross_entropy_forward(const Tensor& loss, const Tensor& probs, const Tensor& logits, const Tensor& labels);
void span_cross_entropy_forward(const Tensor& loss, const Tensor& probs, const Tensor& logits, const Tensor& start,
                                const Tensor& end);
// The loss on the host (on CUDA a copy that waits for the step's work so far). A label outside
// [0, L) is the error the CPU forward throws.
double read_cross_entropy_loss(const Tensor& loss);

// R rows of L: the softmax (max, exp, sum, scale) and the picked log-probability.
OpCost cross_entropy_cost(int64_t R, int64_t L);
OpCost cross_entropy_backward_cost(int64_t R, int64_t L);

// Kernels (ops/cross_entropy_cpu.cc). Row r's element i is logits[r * row_stride + i * stride]
// (question answering's start column: row_stride 2T, stride 2); probs is [R, L] contiguous, and
// dlogits is laid out as logits. The backward skips rows labelled kIgnoreIndex.
double cross_entropy_forward_cpu(float* probs, const float* logits, int64_t row_stride, int64_t stride,
                                 const int32_t* labels, int64_t R, int64_t L);
void cross_entropy_backward_cpu(float* dlogits, int64_t row_stride, int64_t stride, const float* probs,
                                const int32_t* labels, int64_t R, int64_t L, float scale);

// CUDA kernels (ops/cross_entropy_cuda.cu, built with the CUDA backend), the same layouts. The
// forward: one block per row, then one block that adds the rows' losses in a fixed order into
// loss (the kLossSlots above); row_loss: [R] scratch. weight scales this call's mean (1/2 for each
// of question answering's halves); accumulate adds it to loss[0] (the second half) and keeps an
// earlier half's bad row.
void cross_entropy_forward_cuda(int device, float* probs, const float* logits, int64_t row_stride, int64_t stride,
                                const int32_t* labels, int64_t R, int64_t L, double* row_loss, double* loss,
                                double weight, bool accumulate);
// The backward: one block counts the labelled rows into k (f32 [1] scratch: scale / counted), then
// one block per row adds k (probs - onehot) to its gradient.
void cross_entropy_backward_cuda(int device, float* dlogits, int64_t row_stride, int64_t stride, const float* probs,
                                 const int32_t* labels, int64_t R, int64_t L, float scale, float* k);

}  // namespace tach::ops
