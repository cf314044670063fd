// What the families' hand-written training steps share: the span of an op called through its
// kernel, and short names for the raw f32 pointers the kernels take.
#pragma once

#include <cstring>

#include "core/trace.h"
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
inline float* g(const Parameter* p) { return p->grad.data<float>(); }   // its gradient
inline void zero(const Tensor& t) { std::memset(t.raw(), 0, t.nbytes()); }

}  // namespace step

}  // namespace tach::train
