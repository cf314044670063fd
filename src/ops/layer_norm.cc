#include "ops/layer_norm.h"

#include "ops/dispatch.h"

namespace tach::ops {

OpCost layer_norm_cost(int64_t N, int64_t C, bool with_residual) {
  OpCost c;
  c.flops = double(N * C) * (with_residual ? 9 : 8);
  c.bytes_read = double(N * C) * 4 * (with_residual ? 2 : 1) + double(C) * 8;
  c.bytes_written = double(N * C) * 4;
  return c;
}

void layer_norm_forward(Tensor& out, const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                        float eps) {
  check(x.dtype() == DType::f32 && x.is_contiguous(), "layer_norm: x must be contiguous f32, got " + x.describe());
  const int64_t C = x.size(-1), N = x.numel() / (C == 0 ? 1 : C);
  check(gamma.numel() == C && beta.numel() == C && gamma.dtype() == DType::f32 && beta.dtype() == DType::f32,
        "layer_norm: gamma and beta must be f32 [" + std::to_string(C) + "], got " + gamma.describe() + " and " +
            beta.describe());
  check(out.numel() == x.numel() && out.dtype() == DType::f32,
        "layer_norm: out " + out.describe() + " does not match x " + x.describe());
  if (residual.defined())
    check(residual.numel() == x.numel() && residual.dtype() == DType::f32 && residual.is_contiguous(),
          "layer_norm: residual " + residual.describe() + " does not match x " + x.describe());
  check_device("layer_norm", x.device(), {&out, &residual, &gamma, &beta});
  [[maybe_unused]] const bool cuda = on_cuda("layer_norm", x.device(), x.dtype());
  core::Span span(core::SpanKind::op, "layer_norm");
  if (span.active()) {
    const OpCost c = layer_norm_cost(N, C, residual.defined());
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", ", C, "] f32", residual.defined() ? " +residual" : ""));
  }
  const float* res = residual.defined() ? residual.data<float>() : nullptr;
#if TACH_HAS_CUDA
  if (cuda) {
    layer_norm_forward_cuda(x.device().index, out.data<float>(), x.data<float>(), res, gamma.data<float>(),
                            beta.data<float>(), N, C, eps);
    return;
  }
#endif
  layer_norm_forward_cpu(out.data<float>(), x.data<float>(), res, gamma.data<float>(), beta.data<float>(), N, C, eps);
}

}  // namespace tach::ops

namespace tach::ops {

void pre_layer_norm_forward(Tensor& out, Tensor& h, const Tensor& delta, const Tensor& gamma, const Tensor& beta,
                            float eps, const Tensor& mean, const Tensor& rstd) {
  check(h.dtype() == DType::f32 && h.is_contiguous(), "layer_norm: h must be contiguous f32, got " + h.describe());
  const int64_t C = h.size(-1), N = h.numel() / (C == 0 ? 1 : C);
  check(gamma.numel() == C && gamma.dtype() == DType::f32 && (!beta.defined() || beta.numel() == C),
        "layer_norm: gamma (and beta) must be f32 [" + std::to_string(C) + "], got " + gamma.describe());
  check(out.numel() == h.numel() && out.dtype() == DType::f32 && out.raw() != h.raw(),
        "layer_norm: out " + out.describe() + " must match h " + h.describe() + " without aliasing it");
  if (delta.defined())
    check(delta.numel() == h.numel() && delta.dtype() == DType::f32 && delta.is_contiguous(),
          "layer_norm: delta " + delta.describe() + " does not match h " + h.describe());
  check_device("layer_norm", h.device(), {&out, &delta, &gamma, &beta});
  [[maybe_unused]] const bool cuda = on_cuda("layer_norm", h.device(), h.dtype());
  check(!(cuda && (mean.defined() || rstd.defined())),
        "layer_norm: the statistics training saves are kept on the CPU only");
  core::Span span(core::SpanKind::op, "layer_norm");
  if (span.active()) {
    const OpCost c = layer_norm_cost(N, C, delta.defined());
    span.set_cost(c.flops, c.bytes());
    span.set_detail(
        core::concat("[", N, ", ", C, "] f32", delta.defined() ? " +residual" : "", beta.defined() ? "" : " no bias"));
  }
#if TACH_HAS_CUDA
  if (cuda) {
    pre_layer_norm_forward_cuda(h.device().index, out.data<float>(), h.data<float>(),
                                delta.defined() ? delta.data<float>() : nullptr, gamma.data<float>(),
                                beta.defined() ? beta.data<float>() : nullptr, N, C, eps);
    return;
  }
#endif
  add_layer_norm_forward_cpu(out.data<float>(), h.data<float>(), delta.defined() ? delta.data<float>() : nullptr,
                             gamma.data<float>(), beta.defined() ? beta.data<float>() : nullptr, N, C, eps,
                             mean.defined() ? mean.data<float>() : nullptr,
                             rstd.defined() ? rstd.data<float>() : nullptr);
}

}  // namespace tach::ops
