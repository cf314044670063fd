#include "ops/argmax.h"

#include "ops/dispatch.h"

namespace tach::ops {

OpCost argmax_rows_cost(int64_t B, int64_t V) {
  OpCost c;
  c.flops = double(B * V);  // one comparison per logit
  c.bytes_read = double(B * V) * 4;
  c.bytes_written = double(B) * 4;
  return c;
}

void argmax_rows(Tensor& out, const Tensor& logits, double softcap) {
  check(logits.dim() == 2 && logits.dtype() == DType::f32 && logits.is_contiguous() && logits.size(1) > 0,
        "argmax_rows: logits must be contiguous f32 [rows, vocabulary], got " + logits.describe());
  const int64_t B = logits.size(0), V = logits.size(1);
  check(out.dtype() == DType::i32 && out.numel() == B && out.is_contiguous(),
        "argmax_rows: out must be i32 with " + std::to_string(B) + " elements, got " + out.describe());
  check(softcap >= 0, "argmax_rows: the softcap must be 0 (none) or positive");
  check_device("argmax_rows", logits.device(), {&out});
  if (B == 0) return;
  core::Span span(core::SpanKind::op, "argmax");
  if (span.active()) {
    const OpCost c = argmax_rows_cost(B, V);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", B, ", ", V, "] f32"));
  }
#if TACH_HAS_CUDA
  if (on_cuda("argmax_rows", logits.device(), DType::f32)) {
    argmax_rows_cuda(logits.device().index, out.data<int32_t>(), logits.data<float>(), B, V, softcap);
    return;
  }
#else
  on_cuda("argmax_rows", logits.device(), DType::f32);
#endif
  argmax_rows_cpu(out.data<int32_t>(), logits.data<float>(), B, V, softcap);
}

}  // namespace tach::ops
