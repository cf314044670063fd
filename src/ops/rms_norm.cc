#include "ops/rms_norm.h"

#include <cmath>

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"

namespace tach::ops {

OpCost rms_norm_cost(int64_t N, int64_t C, bool with_residual, DType dtype) {
  OpCost c;
  const double row_bytes = double(dtype_bytes(dtype, size_t(N * C)));
  c.flops = double(N * C) * (with_residual ? 5 : 4);
  c.bytes_read = row_bytes * (with_residual ? 2 : 1) + double(C) * 4;
  c.bytes_written = row_bytes * (with_residual ? 2 : 1);
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
  const DType A = h.dtype();
  check(is_activation_dtype(A) && h.is_contiguous(),
        "rms_norm: h must be contiguous f32, bf16 or f16, got " + h.describe());
  const int64_t C = h.size(-1), N = h.numel() / (C == 0 ? 1 : C);
  check(weight.numel() == C && weight.dtype() == DType::f32,
        "rms_norm: weight must be f32 [" + std::to_string(C) + "], got " + weight.describe());
  expect_activation_dtype("rms_norm", "out", out, A);
  expect_activation_dtype("rms_norm", "delta", delta, A);
  check(out.numel() == h.numel() && out.is_contiguous() && out.raw() != h.raw(),
        "rms_norm: out " + out.describe() + " must be a separate contiguous buffer like h " + h.describe());
  if (delta.defined())
    check(delta.numel() == h.numel() && delta.is_contiguous(),
          "rms_norm: delta " + delta.describe() + " does not match h " + h.describe());
  if (rstd.defined())
    check(A == DType::f32 && rstd.numel() == N && rstd.dtype() == DType::f32 && rstd.is_contiguous(),
          "rms_norm: rstd (training's, with f32 activations) must be contiguous f32 [" + std::to_string(N) + "], got " +
              rstd.describe() + " with " + std::string(dtype_name(A)) + " activations");
  check_device("rms_norm", h.device(), {&out, &delta, &weight, &rstd});
  check_activation_dtype("rms_norm", h.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda("rms_norm", h.device(), A);
  core::Span span(core::SpanKind::op, "rms_norm");
  if (span.active()) {
    const OpCost c = rms_norm_cost(N, C, delta.defined(), A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", ", C, "] ", dtype_name(A), delta.defined() ? " +residual" : ""));
  }
#if TACH_HAS_CUDA
  if (cuda && !rstd.defined()) {
    rms_norm_forward_cuda(h.device().index, A, out.raw(), h.raw(), delta.defined() ? delta.raw() : nullptr,
                          weight.data<float>(), N, C, eps);
    return;
  }
#endif
  const float* d = delta.defined() ? delta.data<float>() : nullptr;
#if TACH_HAS_CUDA
  if (cuda) {
    rms_norm_forward_cuda(h.device().index, out.data<float>(), h.data<float>(), d, weight.data<float>(), N, C, eps,
                          rstd.data<float>());
    return;
  }
#endif
  rms_norm_forward_cpu(out.data<float>(), h.data<float>(), d, weight.data<float>(), N, C, eps,
                       rstd.defined() ? rstd.data<float>() : nullptr);
}

OpCost rms_norm_heads_cost(int64_t N, int64_t heads, int64_t D, DType dtype) {
  OpCost c;
  c.flops = double(N * heads * D) * 4;
  c.bytes_read = double(dtype_bytes(dtype, size_t(N * heads * D))) + double(D) * 4;
  c.bytes_written = double(dtype_bytes(dtype, size_t(N * heads * D)));
  return c;
}

void rms_norm_heads_forward(Tensor& x, int64_t col0, int64_t heads, int64_t D, const Tensor& weight, float eps,
                            const Tensor& saved_in, const Tensor& rstd) {
  const DType A = x.dtype();
  check(is_activation_dtype(A) && x.dim() == 2 && x.is_contiguous() && col0 + heads * D <= x.size(1),
        "rms_norm_heads: expected a contiguous f32, bf16 or f16 [N, >= " + std::to_string(col0 + heads * D) +
            "] buffer, got " + x.describe());
  check(weight.dtype() == DType::f32 && weight.numel() == D,
        "rms_norm_heads: weight must be f32 [" + std::to_string(D) + "], got " + weight.describe());
  const int64_t N = x.size(0);
  check(saved_in.defined() == rstd.defined(), "rms_norm_heads: training saves both the input and rstd, or neither");
  if (saved_in.defined())
    check(A == DType::f32 && saved_in.dtype() == DType::f32 && saved_in.is_contiguous() &&
              saved_in.numel() == N * heads * D && rstd.dtype() == DType::f32 && rstd.is_contiguous() &&
              rstd.numel() == N * heads,
          "rms_norm_heads: the saved input must be contiguous f32 [" + std::to_string(N) + ", " +
              std::to_string(heads * D) + "] and rstd [" + std::to_string(N) + ", " + std::to_string(heads) +
              "] (training, f32 activations), got " + saved_in.describe() + " and " + rstd.describe() + " for " +
              x.describe());
  check_device("rms_norm_heads", x.device(), {&weight, &saved_in, &rstd});
  check_activation_dtype("rms_norm_heads", x.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda("rms_norm_heads", x.device(), A);
  core::Span span(core::SpanKind::op, "rms_norm_heads");
  if (span.active()) {
    const OpCost c = rms_norm_heads_cost(N, heads, D, A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", ", heads, "x", D, "] ", dtype_name(A)));
  }
#if TACH_HAS_CUDA
  if (cuda && !saved_in.defined()) {
    void* first = static_cast<char*>(x.raw()) + dtype_bytes(A, size_t(col0));
    rms_norm_heads_forward_cuda(x.device().index, A, first, x.size(1), N, heads, D, weight.data<float>(), eps);
    return;
  }
  if (cuda) {
    rms_norm_heads_forward_cuda(x.device().index, x.data<float>() + col0, x.size(1), N, heads, D, weight.data<float>(),
                                eps, saved_in.data<float>(), rstd.data<float>());
    return;
  }
#endif
  rms_norm_heads_forward_cpu(x.data<float>() + col0, x.size(1), N, heads, D, weight.data<float>(), eps,
                             saved_in.defined() ? saved_in.data<float>() : nullptr,
                             rstd.defined() ? rstd.data<float>() : nullptr);
}

void rms_norm_backward(const Tensor& dinp, const Tensor& dweight, const Tensor& dout, const Tensor& inp,
                       const Tensor& weight, const Tensor& rstd) {
  constexpr const char* kOp = "rms_norm_backward";
  check(inp.dtype() == DType::f32 && inp.is_contiguous() && inp.dim() >= 1,
        std::string(kOp) + ": inp must be contiguous f32 [N, C], got " + inp.describe());
  const int64_t C = inp.size(-1), N = inp.numel() / (C == 0 ? 1 : C);
  for (const Tensor* t : {&dinp, &dout})
    check(t->dtype() == DType::f32 && t->is_contiguous() && t->numel() == inp.numel(),
          std::string(kOp) + ": " + t->describe() + " does not match inp " + inp.describe());
  check(weight.dtype() == DType::f32 && weight.numel() == C,
        std::string(kOp) + ": weight must be f32 [" + std::to_string(C) + "], got " + weight.describe());
  if (dweight.defined())
    check(dweight.dtype() == DType::f32 && dweight.numel() == C,
          std::string(kOp) + ": dweight must be f32 [" + std::to_string(C) + "], got " + dweight.describe());
  check(rstd.dtype() == DType::f32 && rstd.is_contiguous() && rstd.numel() == N,
        std::string(kOp) + ": rstd must be contiguous f32 [" + std::to_string(N) + "], got " + rstd.describe());
  check_device(kOp, inp.device(), {&dinp, &dweight, &dout, &weight, &rstd});
  [[maybe_unused]] const bool cuda = on_cuda(kOp, inp.device(), inp.dtype());
  core::Span span(core::SpanKind::op, kOp);
  if (span.active()) {
    const OpCost c = rms_norm_backward_cost(N, C);
    span.set_cost(c.flops, c.bytes());
  }
#if TACH_HAS_CUDA
  if (cuda) {
    rms_norm_backward_cuda(inp.device().index, dinp.data<float>(), dweight.defined() ? dweight.data<float>() : nullptr,
                           dout.data<float>(), inp.data<float>(), weight.data<float>(), rstd.data<float>(), N, C);
    return;
  }
#endif
  rms_norm_backward_cpu(dinp.data<float>(), dweight.defined() ? dweight.data<float>() : nullptr, dout.data<float>(),
                        inp.data<float>(), weight.data<float>(), rstd.data<float>(), N, C);
}

void rms_norm_heads_backward(const Tensor& d_qkv, int64_t q_heads, int64_t k_heads, int64_t D, const Tensor& saved_in,
                             const Tensor& rstd, const Tensor& q_weight, const Tensor& k_weight,
                             const Tensor& dq_weight, const Tensor& dk_weight) {
  constexpr const char* kOp = "rms_norm_heads_backward";
  const int64_t heads = q_heads + k_heads;
  check(d_qkv.dtype() == DType::f32 && d_qkv.dim() == 2 && d_qkv.is_contiguous() && D > 0 && d_qkv.size(1) >= heads * D,
        std::string(kOp) + ": expected a contiguous f32 [N, >= " + std::to_string(heads * D) + "] buffer, got " +
            d_qkv.describe());
  const int64_t N = d_qkv.size(0);
  check(saved_in.dtype() == DType::f32 && saved_in.is_contiguous() && saved_in.numel() == N * heads * D,
        std::string(kOp) + ": the saved input must be contiguous f32 [" + std::to_string(N) + ", " +
            std::to_string(heads * D) + "], got " + saved_in.describe());
  check(rstd.dtype() == DType::f32 && rstd.is_contiguous() && rstd.numel() == N * heads,
        std::string(kOp) + ": rstd must be contiguous f32 [" + std::to_string(N) + ", " + std::to_string(heads) +
            "], got " + rstd.describe());
  for (const Tensor* w : {&q_weight, &k_weight, &dq_weight, &dk_weight})
    check(!w->defined() || (w->dtype() == DType::f32 && w->numel() == D),
          std::string(kOp) + ": a norm weight or its gradient must be f32 [" + std::to_string(D) + "], got " +
              w->describe());
  check(q_weight.defined() && k_weight.defined(), std::string(kOp) + ": both norm weights are needed");
  check_device(kOp, d_qkv.device(), {&saved_in, &rstd, &q_weight, &k_weight, &dq_weight, &dk_weight});
  [[maybe_unused]] const bool cuda = on_cuda(kOp, d_qkv.device(), d_qkv.dtype());
  core::Span span(core::SpanKind::op, kOp);
  if (span.active()) {
    const OpCost c = rms_norm_heads_cost(N, heads, D);
    span.set_cost(c.flops, c.bytes());
  }
  auto grad = [](const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; };
  const int64_t ld = d_qkv.size(1);
  float* d = d_qkv.data<float>();
  const float* in = saved_in.data<float>();
  const float* r = rstd.data<float>();
#if TACH_HAS_CUDA
  if (cuda) {
    const int device = d_qkv.device().index;
    rms_norm_heads_backward_cuda(device, d, ld, in, q_weight.data<float>(), r, grad(dq_weight), N, q_heads, D);
    rms_norm_heads_backward_cuda(device, d + q_heads * D, ld, in + N * q_heads * D, k_weight.data<float>(),
                                 r + N * q_heads, grad(dk_weight), N, k_heads, D);
    return;
  }
#endif
  rms_norm_heads_backward_cpu(d, ld, in, q_weight.data<float>(), r, grad(dq_weight), N, q_heads, D);
  rms_norm_heads_backward_cpu(d + q_heads * D, ld, in + N * q_heads * D, k_weight.data<float>(), r + N * q_heads,
                              grad(dk_weight), N, k_heads, D);
}

}  // namespace tach::ops
