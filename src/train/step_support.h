// What the families' hand-written training steps share: the span of an op called through its
// kernel, and short names for the raw f32 pointers the kernels take.
#pragma once

#include <cstring>

#include "core/trace.h"
#include "cpu/nf4_gemm.h"
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

// A parameter as the ops take it: its master value, and its gradient, undefined for a frozen
// parameter (LoRA's base weights: the ops skip it and do not count it).
inline const Tensor& grad(const Parameter* p) {
  static const Tensor none;
  return p->trainable && p->grad.defined() ? p->grad : none;
}
// A fused tensor's gradient, undefined when every part is frozen.
inline const Tensor& grad(const FusedTensor& t) { return t.grad; }
// A layer linear's weight for ops::linear_forward_train/linear_backward: the f32 master, or NF4.
inline ops::TrainLinearWeight weight(const Parameter* p) {
  return p->nf4 ? ops::TrainLinearWeight(*p->nf4) : ops::TrainLinearWeight(p->value);
}
inline ops::TrainLinearWeight weight(const FusedTensor& t) {
  return t.nf4 ? ops::TrainLinearWeight(*t.nf4) : ops::TrainLinearWeight(t.value);
}

// Raw pointers, for the calls that still take them (the LoRA adapters).
inline float* f(const Tensor& t) { return t.data<float>(); }
inline float* f(const Parameter* p) { return p->value.data<float>(); }  // the master value
// Its gradient, or null for a frozen parameter (LoRA's base weights): the kernels skip it.
inline float* g(const Parameter* p) { return p->trainable && p->grad.defined() ? p->grad.data<float>() : nullptr; }
// A fused tensor's gradient, or null when every part is frozen.
inline float* g(const FusedTensor& t) { return t.grad.defined() ? t.grad.data<float>() : nullptr; }
inline void zero(const Tensor& t) { std::memset(t.raw(), 0, t.nbytes()); }

// The linear's backward as an op: its declared cost counts only the GEMMs that run (a frozen
// weight's dW is skipped, and so is its cost). Arguments as ops::linear_backward_cpu.
inline void linear_backward(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W, int64_t M,
                            int64_t N, int64_t K) {
  OpSpan o("linear_backward", ops::linear_backward_cost(M, N, K, db != nullptr, dx != nullptr, dW != nullptr));
  ops::linear_backward_cpu(dx, dW, db, dy, x, W, M, N, K);
}

// A layer linear's weight as the kernels take it: the f32 master, or NF4 (QLoRA's frozen base,
// multiplied tile by tile, cpu/nf4_gemm.h).
struct LinearWeight {
  const float* f32 = nullptr;
  const cpu::Nf4Matrix* nf4 = nullptr;
};
inline LinearWeight wt(const Parameter* p) { return {p->value.defined() ? f(p) : nullptr, p->nf4.get()}; }
inline LinearWeight wt(const FusedTensor& t) { return {t.value.defined() ? f(t.value) : nullptr, t.nf4.get()}; }

// y [M, N] = x [M, K] · Wᵀ + b, as the op "linear" (f32 weight) or "linear_nf4".
inline void linear_forward(float* y, const float* x, LinearWeight W, const float* b, int64_t M, int64_t N, int64_t K) {
  if (W.nf4) {
    OpSpan o("linear_nf4", ops::linear_cost(M, N, K, DType::nf4, b != nullptr));
    cpu::nf4_linear_forward(y, x, *W.nf4, b, M, N, K);
    return;
  }
  OpSpan o("linear", ops::linear_cost(M, N, K, DType::f32, b != nullptr));
  ops::linear_forward_cpu(y, x, W.f32, b, M, N, K);
}

// The backward of a layer linear; an NF4 weight is frozen, so it has a dx (and a bias's db) only.
inline void linear_backward(float* dx, float* dW, float* db, const float* dy, const float* x, LinearWeight W, int64_t M,
                            int64_t N, int64_t K) {
  if (!W.nf4) {
    linear_backward(dx, dW, db, dy, x, W.f32, M, N, K);
    return;
  }
  ops::OpCost c = ops::linear_backward_cost(M, N, K, db != nullptr, dx != nullptr, false);
  c.bytes_read += double(dtype_bytes(DType::nf4, size_t(N * K))) - 4.0 * double(N * K);  // the weight is 4-bit
  OpSpan o("linear_nf4_backward", c);
  if (dx) cpu::nf4_linear_backward_dx(dx, dy, *W.nf4, M, N, K);
  if (db) ops::linear_backward_cpu(nullptr, nullptr, db, dy, x, nullptr, M, N, K);
}

}  // namespace step

}  // namespace tach::train
