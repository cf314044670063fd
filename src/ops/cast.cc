// The cast op's checks, cost and dispatch; the kernels are in cast_cpu.cc and cast_cuda.cu.
#include "ops/cast.h"

#include <string>

#include "core/trace.h"
#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost cast_cost(int64_t n, DType from, DType to) {
  OpCost c;
  c.bytes_read = double(dtype_bytes(from, size_t(n)));
  c.bytes_written = double(dtype_bytes(to, size_t(n)));
  return c;
}

void cast(const Tensor& out, const Tensor& in) {
  constexpr const char* kOp = "cast";
  for (const Tensor* t : {&in, &out})
    if (!t->defined() || !is_activation_dtype(t->dtype()) || !dense(*t))
      bad_tensor(kOp, t == &in ? "in" : "out", *t, "a contiguous f32, bf16 or f16 tensor");
  if (out.numel() != in.numel())
    throw Error(std::string(kOp) + ": out " + out.describe() + " must have the " + std::to_string(in.numel()) +
                " elements of in " + in.describe());
  check_device(kOp, in.device(), {&out});
  [[maybe_unused]] const bool cuda = on_cuda(kOp, in.device(), in.dtype());
  const int64_t n = in.numel();
  core::Span span(core::SpanKind::op, kOp);
  if (span.active()) {
    const OpCost c = cast_cost(n, in.dtype(), out.dtype());
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", n, "] ", dtype_name(in.dtype()), " -> ", dtype_name(out.dtype())));
  }
  if (n == 0) return;
#if TACH_HAS_CUDA
  if (cuda) return cast_cuda(in.device().index, out.raw(), out.dtype(), in.raw(), in.dtype(), n);
#endif
  cast_cpu(out.raw(), out.dtype(), in.raw(), in.dtype(), n);
}

}  // namespace tach::ops
