#include "ops/layer_norm.h"

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost layer_norm_cost(int64_t N, int64_t C, bool with_residual, DType dtype) {
  OpCost c;
  const double row_bytes = double(dtype_bytes(dtype, size_t(N * C)));
  c.flops = double(N * C) * (with_residual ? 9 : 8);
  c.bytes_read = row_bytes * (with_residual ? 2 : 1) + double(C) * 8;
  c.bytes_written = row_bytes;
  return c;
}

void layer_norm_forward(Tensor& out, const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                        float eps) {
  const DType A = x.dtype();
  check(is_activation_dtype(A) && x.is_contiguous(),
        "layer_norm: x must be contiguous f32, bf16 or f16, got " + x.describe());
  const int64_t C = x.size(-1), N = x.numel() / (C == 0 ? 1 : C);
  check(gamma.numel() == C && beta.numel() == C && gamma.dtype() == DType::f32 && beta.dtype() == DType::f32,
        "layer_norm: gamma and beta must be f32 [" + std::to_string(C) + "], got " + gamma.describe() + " and " +
            beta.describe());
  expect_activation_dtype("layer_norm", "out", out, A);
  expect_activation_dtype("layer_norm", "residual", residual, A);
  check(out.numel() == x.numel() && out.is_contiguous(),
        "layer_norm: out " + out.describe() + " does not match x " + x.describe());
  if (residual.defined())
    check(residual.numel() == x.numel() && residual.is_contiguous(),
          "layer_norm: residual " + residual.describe() + " does not match x " + x.describe());
  check_device("layer_norm", x.device(), {&out, &residual, &gamma, &beta});
  check_activation_dtype("layer_norm", x.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda("layer_norm", x.device(), A);
  core::Span span(core::SpanKind::op, "layer_norm");
  if (span.active()) {
    const OpCost c = layer_norm_cost(N, C, residual.defined(), A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", ", C, "] ", dtype_name(A), residual.defined() ? " +residual" : ""));
  }
#if TACH_HAS_CUDA
  if (cuda) {
    layer_norm_forward_cuda(x.device().index, A, out.raw(), x.raw(), residual.defined() ? residual.raw() : nullptr,
                            gamma.data<float>(), beta.data<float>(), N, C, eps);
    return;
  }
#endif
  const float* res = residual.defined() ? residual.data<float>() : nullptr;
  layer_norm_forward_cpu(out.data<float>(), x.data<float>(), res, gamma.data<float>(), beta.data<float>(), N, C, eps);
}

}  // namespace tach::ops

namespace tach::ops {

void pre_layer_norm_forward(Tensor& out, Tensor& h, const Tensor& delta, const Tensor& gamma, const Tensor& beta,
                            float eps, const Tensor& mean, const Tensor& rstd) {
  const DType A = h.dtype();
  check(is_activation_dtype(A) && h.is_contiguous(),
        "layer_norm: h must be contiguous f32, bf16 or f16, got " + h.describe());
  const int64_t C = h.size(-1), N = h.numel() / (C == 0 ? 1 : C);
  check(gamma.numel() == C && gamma.dtype() == DType::f32 &&
            (!beta.defined() || (beta.numel() == C && beta.dtype() == DType::f32)),
        "layer_norm: gamma (and beta) must be f32 [" + std::to_string(C) + "], got " + gamma.describe());
  expect_activation_dtype("layer_norm", "out", out, A);
  expect_activation_dtype("layer_norm", "delta", delta, A);
  check(out.numel() == h.numel() && out.is_contiguous() && out.raw() != h.raw(),
        "layer_norm: out " + out.describe() + " must match h " + h.describe() + " without aliasing it");
  if (delta.defined())
    check(delta.numel() == h.numel() && delta.is_contiguous(),
          "layer_norm: delta " + delta.describe() + " does not match h " + h.describe());
  const bool saves = mean.defined() || rstd.defined();
  if (saves) {  // training saves both, in f32 activations
    check(A == DType::f32, "layer_norm: saving mean and rstd is training's, whose activations are f32, not " +
                               std::string(dtype_name(A)));
    expect_f32("layer_norm", "mean", mean, N);
    expect_f32("layer_norm", "rstd", rstd, N);
  }
  check_device("layer_norm", h.device(), {&out, &delta, &gamma, &beta, &mean, &rstd});
  check_activation_dtype("layer_norm", h.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda("layer_norm", h.device(), A);
  core::Span span(core::SpanKind::op, "layer_norm");
  if (span.active()) {
    const OpCost c = layer_norm_cost(N, C, delta.defined(), A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", ", C, "] ", dtype_name(A), delta.defined() ? " +residual" : "",
                                 beta.defined() ? "" : " no bias"));
  }
  const float* b = beta.defined() ? beta.data<float>() : nullptr;
#if TACH_HAS_CUDA
  if (cuda && !saves) {
    pre_layer_norm_forward_cuda(h.device().index, A, out.raw(), h.raw(), delta.defined() ? delta.raw() : nullptr,
                                gamma.data<float>(), b, N, C, eps);
    return;
  }
  if (cuda) {
    pre_layer_norm_forward_cuda(h.device().index, out.data<float>(), h.data<float>(),
                                delta.defined() ? delta.data<float>() : nullptr, gamma.data<float>(), b, N, C, eps,
                                mean.data<float>(), rstd.data<float>());
    return;
  }
#endif
  add_layer_norm_forward_cpu(out.data<float>(), h.data<float>(), delta.defined() ? delta.data<float>() : nullptr,
                             gamma.data<float>(), b, N, C, eps, mean.defined() ? mean.data<float>() : nullptr,
                             rstd.defined() ? rstd.data<float>() : nullptr);
}

}  // namespace tach::ops

namespace tach::ops {

OpCost layer_norm_backward_cost(int64_t N, int64_t C, bool param_grads) {
  OpCost c;
  // Per element: x̂ again, dx̂ = dout·gamma, the two row sums, dinp's formula; dgamma and dbeta's sums.
  c.flops = double(N * C) * (param_grads ? 11 : 8);
  c.bytes_read = double(N * C) * 12 + double(C) * 4 + double(N) * 8;  // dout, inp, dinp (accumulated)
  c.bytes_written = double(N * C) * 4 + (param_grads ? double(C) * 8 : 0);
  return c;
}

namespace {

const float* or_null(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }

void check_norm_params(const char* op, const Tensor& gamma, const Tensor& beta, const Tensor& mean, const Tensor& rstd,
                       int64_t N, int64_t C) {
  expect_f32(op, "gamma", gamma, C);
  expect_f32_or_none(op, "beta", beta, C);
  expect_f32(op, "mean", mean, N);
  expect_f32(op, "rstd", rstd, N);
}

void open_span(core::Span& span, const OpCost& c) {
  if (span.active()) span.set_cost(c.flops, c.bytes());
}

}  // namespace

void layer_norm_forward_train(const Tensor& out, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                              const Tensor& mean, const Tensor& rstd) {
  const char* op = "layer_norm";
  if (x.dim() != 2) bad_tensor(op, "x", x, "an f32 [N, C]");
  const int64_t N = x.shape()[0], C = x.shape()[1];
  expect_matrix(op, "x", x, N, C);
  expect_matrix(op, "out", out, N, C);
  check_norm_params(op, gamma, beta, mean, rstd, N, C);
  check_device(op, x.device(), {&out, &gamma, &beta, &mean, &rstd});
  [[maybe_unused]] const bool cuda = on_cuda(op, x.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  open_span(span, layer_norm_cost(N, C, false));
#if TACH_HAS_CUDA
  if (cuda) {
    layer_norm_forward_cuda(x.device().index, out.data<float>(), x.data<float>(), nullptr, gamma.data<float>(),
                            or_null(beta), N, C, eps, mean.data<float>(), rstd.data<float>());
    return;
  }
#endif
  layer_norm_forward_cpu(out.data<float>(), x.data<float>(), nullptr, gamma.data<float>(), or_null(beta), N, C, eps,
                         mean.data<float>(), rstd.data<float>());
}

void dropout_add_layer_norm_forward(const Tensor& sum, const Tensor& out, const Tensor& branch, const Tensor& x,
                                    const Tensor& gamma, const Tensor& beta, float eps, float dropout_p,
                                    uint64_t dropout_key, const Tensor& mean, const Tensor& rstd) {
  const char* op = "dropout_add_layer_norm";
  if (x.dim() != 2) bad_tensor(op, "x", x, "an f32 [N, C]");
  const int64_t N = x.shape()[0], C = x.shape()[1];
  expect_matrix(op, "x", x, N, C);
  expect_matrix(op, "branch", branch, N, C);
  expect_matrix(op, "sum", sum, N, C);
  expect_matrix(op, "out", out, N, C);
  check_norm_params(op, gamma, beta, mean, rstd, N, C);
  check_device(op, x.device(), {&sum, &out, &branch, &gamma, &beta, &mean, &rstd});
  [[maybe_unused]] const bool cuda = on_cuda(op, x.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  open_span(span, layer_norm_cost(N, C, true));
#if TACH_HAS_CUDA
  if (cuda) {
    dropout_add_layer_norm_forward_cuda(x.device().index, sum.data<float>(), out.data<float>(), branch.data<float>(),
                                        x.data<float>(), gamma.data<float>(), or_null(beta), N, C, eps, dropout_p,
                                        dropout_key, mean.data<float>(), rstd.data<float>());
    return;
  }
#endif
  dropout_add_layer_norm_forward_cpu(sum.data<float>(), out.data<float>(), branch.data<float>(), x.data<float>(),
                                     gamma.data<float>(), or_null(beta), N, C, eps, dropout_p, dropout_key,
                                     mean.data<float>(), rstd.data<float>());
}

void layer_norm_backward(const Tensor& dinp, const Tensor& dgamma, const Tensor& dbeta, const Tensor& dout,
                         const Tensor& inp, const Tensor& gamma, const Tensor& mean, const Tensor& rstd) {
  const char* op = "layer_norm_backward";
  if (inp.dim() != 2) bad_tensor(op, "inp", inp, "an f32 [N, C]");
  const int64_t N = inp.shape()[0], C = inp.shape()[1];
  expect_matrix(op, "inp", inp, N, C);
  expect_matrix(op, "dout", dout, N, C);
  expect_matrix(op, "dinp", dinp, N, C);
  check_norm_params(op, gamma, Tensor(), mean, rstd, N, C);
  expect_f32_or_none(op, "dgamma", dgamma, C);
  expect_f32_or_none(op, "dbeta", dbeta, C);
  check_device(op, inp.device(), {&dinp, &dgamma, &dbeta, &dout, &gamma, &mean, &rstd});
  [[maybe_unused]] const bool cuda = on_cuda(op, inp.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  open_span(span, layer_norm_backward_cost(N, C, dgamma.defined() || dbeta.defined()));
#if TACH_HAS_CUDA
  if (cuda) {
    layer_norm_backward_cuda(inp.device().index, dinp.data<float>(), dgamma.defined() ? dgamma.data<float>() : nullptr,
                             dbeta.defined() ? dbeta.data<float>() : nullptr, dout.data<float>(), inp.data<float>(),
                             gamma.data<float>(), mean.data<float>(), rstd.data<float>(), N, C);
    return;
  }
#endif
  layer_norm_backward_cpu(dinp.data<float>(), dgamma.defined() ? dgamma.data<float>() : nullptr,
                          dbeta.defined() ? dbeta.data<float>() : nullptr, dout.data<float>(), inp.data<float>(),
                          gamma.data<float>(), mean.data<float>(), rstd.data<float>(), N, C);
}

}  // namespace tach::ops
