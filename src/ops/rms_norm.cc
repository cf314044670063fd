#include "ops/rms_norm.h"

#include <cmath>

#include "ops/dispatch.h"

namespace tach::ops {

OpCost rms_norm_cost(int64_t N, int64_t C, bool with_residual) {
  OpCost c;
  c.flops = double(N * C) * (with_residual ? 5 : 4);
  c.bytes_read = double(N * C) * 4 * (with_residual ? 2 : 1) + double(C) * 4;
  c.bytes_written = double(N * C) * 4 * (with_residual ? 2 : 1);
  return c;
}

OpCost rms_norm_backward_cost(int64_t N, int64_t C) {
  OpCost c;
  c.flops = double(N * C) * 8;
  c.bytes_read = double(N * C) * 12 + double(C) * 4;  // dout, inp, dinp
  c.bytes_written = double(N * C) * 4 + double(C) * 4;
  return c;
}

void rms_norm_forward(Tensor& out, Tensor& h, const Tensor& delta, const Tensor& weight, float eps,
                      const Tensor& rstd) {
  check(h.dtype() == DType::f32 && h.is_contiguous(), "rms_norm: h must be contiguous f32, got " + h.describe());
  const int64_t C = h.size(-1), N = h.numel() / (C == 0 ? 1 : C);
  check(weight.numel() == C && weight.dtype() == DType::f32,
        "rms_norm: weight must be f32 [" + std::to_string(C) + "], got " + weight.describe());
  check(out.numel() == h.numel() && out.dtype() == DType::f32 && out.is_contiguous() &&
            out.data<float>() != h.data<float>(),
        "rms_norm: out " + out.describe() + " must be a separate contiguous f32 buffer like h " + h.describe());
  if (delta.defined())
    check(delta.numel() == h.numel() && delta.dtype() == DType::f32 && delta.is_contiguous(),
          "rms_norm: delta " + delta.describe() + " does not match h " + h.describe());
  if (rstd.defined())
    check(rstd.numel() == N && rstd.dtype() == DType::f32 && rstd.device().kind == DeviceKind::cpu,
          "rms_norm: rstd must be f32 [" + std::to_string(N) + "] on the CPU, got " + rstd.describe());
  check_device("rms_norm", h.device(), {&out, &delta, &weight});
  [[maybe_unused]] const bool cuda = on_cuda("rms_norm", h.device(), h.dtype());
  check(!(cuda && rstd.defined()), "rms_norm: the statistics training saves are kept on the CPU only");
  core::Span span(core::SpanKind::op, "rms_norm");
  if (span.active()) {
    const OpCost c = rms_norm_cost(N, C, delta.defined());
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", ", C, "] f32", delta.defined() ? " +residual" : ""));
  }
  const float* d = delta.defined() ? delta.data<float>() : nullptr;
#if TACH_HAS_CUDA
  if (cuda) {
    rms_norm_forward_cuda(h.device().index, out.data<float>(), h.data<float>(), d, weight.data<float>(), N, C, eps);
    return;
  }
#endif
  rms_norm_forward_cpu(out.data<float>(), h.data<float>(), d, weight.data<float>(), N, C, eps,
                       rstd.defined() ? rstd.data<float>() : nullptr);
}

OpCost rms_norm_heads_cost(int64_t N, int64_t heads, int64_t D) {
  OpCost c;
  c.flops = double(N * heads * D) * 4;
  c.bytes_read = double(N * heads * D) * 4 + double(D) * 4;
  c.bytes_written = double(N * heads * D) * 4;
  return c;
}

void rms_norm_heads_forward(Tensor& x, int64_t col0, int64_t heads, int64_t D, const Tensor& weight, float eps,
                            float* saved_in, float* rstd) {
  check(x.dtype() == DType::f32 && x.dim() == 2 && x.is_contiguous() && col0 + heads * D <= x.size(1),
        "rms_norm_heads: expected a contiguous f32 [N, >= " + std::to_string(col0 + heads * D) + "] buffer, got " +
            x.describe());
  check(weight.dtype() == DType::f32 && weight.numel() == D,
        "rms_norm_heads: weight must be f32 [" + std::to_string(D) + "], got " + weight.describe());
  check_device("rms_norm_heads", x.device(), {&weight});
  [[maybe_unused]] const bool cuda = on_cuda("rms_norm_heads", x.device(), x.dtype());
  check(!(cuda && (saved_in || rstd)), "rms_norm_heads: the values training saves are kept on the CPU only");
  const int64_t N = x.size(0);
  core::Span span(core::SpanKind::op, "rms_norm_heads");
  if (span.active()) {
    const OpCost c = rms_norm_heads_cost(N, heads, D);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", ", heads, "x", D, "] f32"));
  }
#if TACH_HAS_CUDA
  if (cuda) {
    rms_norm_heads_forward_cuda(x.device().index, x.data<float>() + col0, x.size(1), N, heads, D, weight.data<float>(),
                                eps);
    return;
  }
#endif
  rms_norm_heads_forward_cpu(x.data<float>() + col0, x.size(1), N, heads, D, weight.data<float>(), eps, saved_in, rstd);
}

}  // namespace tach::ops
