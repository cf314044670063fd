// What the families' hand-written training steps share: the span of an op called through its
// kernel, and short names for the raw f32 pointers the kernels take.
#pragma once

#include <cstring>

#include "core/trace.h"
#include "ops/linear.h"
#include "ops/op_cost.h"
#include "tach/tensor.h"
#include "train/parameters.h"

namespace tach::train {

// An op span with its declared cost (built only while a trace is being recorded).
struct OpSpan {
  core::Span span;
  OpSpan(const char* name, const ops::OpCost& cost) : span(core::SpanKind::op, name) {
    if (span.active()) span.set_cost(cost.flops, cost.bytes());
  }
};

namespace step {

inline float* f(const Tensor& t) { return t.data<float>(); }
inline float* f(const Parameter* p) { return p->value.data<float>(); }  // the master value
// Its gradient, or null for a frozen parameter (LoRA's base weights): the kernels skip it.
inline float* g(const Parameter* p) { return p->trainable && p->grad.defined() ? p->grad.data<float>() : nullptr; }
// A fused tensor's gradient, or null when every part is frozen.
inline float* g(const FusedTensor& t) { return t.grad.defined() ? t.grad.data<float>() : nullptr; }
inline void zero(const Tensor& t) { std::memset(t.raw(), 0, t.nbytes()); }

// The linear's backward as an op: its declared cost counts only the GEMMs that run (a frozen
// weight's dW is skipped, and so is its cost). Arguments as ops::linear_backward_cpu.
inline void linear_backward(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W,
                            int64_t M, int64_t N, int64_t K) {
  OpSpan o("linear_backward", ops::linear_backward_cost(M, N, K, db != nullptr, dx != nullptr, dW != nullptr));
  ops::linear_backward_cpu(dx, dW, db, dy, x, W, M, N, K);
}

}  // namespace step

}  // namespace tach::train
