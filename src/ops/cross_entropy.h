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

}  // namespace tach::ops
