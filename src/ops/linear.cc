#include "ops/linear.h"

#include "ops/dispatch.h"

namespace tach::ops {

OpCost linear_cost(int64_t M, int64_t N, int64_t K, DType compute, bool has_bias) {
  OpCost c;
  c.flops = 2.0 * double(M) * double(N) * double(K) + (has_bias ? double(M * N) : 0);
  c.bytes_read = double(M * K) * 4 + double(dtype_bytes(compute, size_t(N * K))) + (has_bias ? double(N) * 4 : 0);
  c.bytes_written = double(M * N) * 4;
  return c;
}

OpCost linear_backward_cost(int64_t M, int64_t N, int64_t K, bool has_bias, bool needs_dx, bool needs_dw) {
  OpCost c;
  // dW = dyᵀ·x (2MNK, skipped for a frozen weight), dx = dy·W (2MNK), db (MN).
  const int gemms = (needs_dx ? 1 : 0) + (needs_dw ? 1 : 0);
  c.flops = 2.0 * double(M) * double(N) * double(K) * gemms + (has_bias ? double(M * N) : 0);
  c.bytes_read = double(M * N) * 4 + (needs_dw ? double(M * K) * 4 + double(N * K) * 4 : 0) +
                 (needs_dx ? double(N * K) * 4 : 0);
  c.bytes_written = (needs_dw ? double(N * K) * 4 : 0) + (needs_dx ? double(M * K) * 4 : 0) +
                    (has_bias ? double(N) * 4 : 0);
  return c;
}

void linear_forward(Tensor& out, const Tensor& x, const cpu::PackedLinear& weight) {
  check(x.dtype() == DType::f32 && x.dim() == 2 && x.strides()[1] == 1,
        "linear: x must be f32 [M, K] with unit column stride, got " + x.describe());
  check(x.size(1) == weight.in_features(), "linear: x " + x.describe() + " has " + std::to_string(x.size(1)) +
                                               " features, the weight expects " + std::to_string(weight.in_features()));
  check(out.dtype() == DType::f32 && out.dim() == 2 && out.size(0) == x.size(0) &&
            out.size(1) == weight.out_features() && out.strides()[1] == 1,
        "linear: out " + out.describe() + " must be f32 [" + std::to_string(x.size(0)) + ", " +
            std::to_string(weight.out_features()) + "]");
  if (x.device().kind != DeviceKind::cpu) unsupported("linear", x.device(), weight.compute_dtype());
  core::Span span(core::SpanKind::op, "linear");
  if (span.active()) {
    const OpCost c = linear_cost(x.size(0), weight.out_features(), x.size(1), weight.compute_dtype(), weight.has_bias());
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("x [", x.size(0), ", ", x.size(1), "] · W [", weight.out_features(), ", ", x.size(1),
                                 "]ᵀ ", dtype_name(weight.compute_dtype())));
  }
  weight.forward(x.data<float>(), x.size(0), x.strides()[0], out.data<float>(), out.strides()[0]);
}

}  // namespace tach::ops
