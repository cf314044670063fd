#include "ops/fill.h"

#include <cstring>

#include "core/allocator.h"
#include "core/trace.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost fill_zero_cost(int64_t bytes) {
  OpCost c;
  c.bytes_written = double(bytes);
  return c;
}

void fill_zero(const Tensor& t) {
  if (!t.defined() || !dense(t)) bad_tensor("zero", "t", t, "a contiguous tensor");
  const bool cuda = on_cuda("zero", t.device(), t.dtype());
  core::Span span(core::SpanKind::op, "zero");
  if (span.active()) {
    const OpCost c = fill_zero_cost(int64_t(t.nbytes()));
    span.set_cost(c.flops, c.bytes());
  }
  if (cuda) core::zero_bytes(t.device(), t.raw(), t.nbytes());  // the device's allocator clears it
  else std::memset(t.raw(), 0, t.nbytes());
}

}  // namespace tach::ops
