// The span of one op called through its kernel, with its declared cost (built only while a
// trace is being recorded), for the training steps' hand-written forward and backward.
#pragma once

#include "core/trace.h"
#include "ops/op_cost.h"

namespace tach::train {

struct OpSpan {
  core::Span span;
  OpSpan(const char* name, const ops::OpCost& cost) : span(core::SpanKind::op, name) {
    if (span.active()) span.set_cost(cost.flops, cost.bytes());
  }
};

}  // namespace tach::train
