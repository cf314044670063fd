#include "ops/linear.h"

#include "ops/dispatch.h"

namespace tach::ops {

OpCost linear_cost(int64_t M, int64_t N, int64_t K, DType compute, bool has_bias) {
  OpCost c;
  c.flops = 2.0 * double(M) * double(N) * double(K) + (has_bias ? double(M * N) : 0);
  // The weight as the kernel reads it: int8 with an f32 scale per output row; NF4's 4-bit codes
  // with the f32 absmax of each 64-weight block (cpu/nf4_linear.h).
  double weight = double(dtype_bytes(compute, size_t(N * K)));
  if (compute == DType::i8) weight += double(N) * 4;
  if (compute == DType::nf4) weight += double(N * K) / 64 * 4;
  c.bytes_read = double(M * K) * 4 + weight + (has_bias ? double(N) * 4 : 0);
  c.bytes_written = double(M * N) * 4;
  return c;
}

OpCost linear_backward_cost(int64_t M, int64_t N, int64_t K, bool has_bias, bool needs_dx, bool needs_dw) {
  OpCost c;
  // dW = dyᵀ·x (2MNK, skipped for a frozen weight), dx = dy·W (2MNK), db (MN).
  const int gemms = (needs_dx ? 1 : 0) + (needs_dw ? 1 : 0);
  c.flops = 2.0 * double(M) * double(N) * double(K) * gemms + (has_bias ? double(M * N) : 0);
  c.bytes_read =
      double(M * N) * 4 + (needs_dw ? double(M * K) * 4 + double(N * K) * 4 : 0) + (needs_dx ? double(N * K) * 4 : 0);
  c.bytes_written =
      (needs_dw ? double(N * K) * 4 : 0) + (needs_dx ? double(M * K) * 4 : 0) + (has_bias ? double(N) * 4 : 0);
  return c;
}

namespace {

void check_linear_shapes(const Tensor& out, const Tensor& x, int64_t in_features, int64_t out_features) {
  check(x.dtype() == DType::f32 && x.dim() == 2 && x.strides()[1] == 1,
        "linear: x must be f32 [M, K] with unit column stride, got " + x.describe());
  check(x.size(1) == in_features, "linear: x " + x.describe() + " has " + std::to_string(x.size(1)) +
                                      " features, the weight expects " + std::to_string(in_features));
  check(out.dtype() == DType::f32 && out.dim() == 2 && out.size(0) == x.size(0) && out.size(1) == out_features &&
            out.strides()[1] == 1,
        "linear: out " + out.describe() + " must be f32 [" + std::to_string(x.size(0)) + ", " +
            std::to_string(out_features) + "]");
}

void describe_span(core::Span& span, const Tensor& x, int64_t N, DType compute, bool has_bias) {
  if (!span.active()) return;
  const OpCost c = linear_cost(x.size(0), N, x.size(1), compute, has_bias);
  span.set_cost(c.flops, c.bytes());
  span.set_detail(
      core::concat("x [", x.size(0), ", ", x.size(1), "] · W [", N, ", ", x.size(1), "]ᵀ ", dtype_name(compute)));
}

}  // namespace

Linear::Linear(const Tensor& weight, const Tensor& bias, const LinearPlacement& placement,
               cpu::FusedActivation activation)
    : placement_(placement), activation_(activation) {
  check(weight.dim() == 2, "linear: weight must be [out, in], got " + weight.describe());
  N_ = weight.size(0), K_ = weight.size(1);
  has_bias_ = bias.defined();
  if (has_bias_)
    check(bias.numel() == N_, "linear: bias " + bias.describe() + " does not match weight " + weight.describe());
  // Both are prepared from host copies (a tied LM head's weight may already be on the device).
  const Tensor host_w = weight.on(Device::cpu(), MemoryCategory::workspace);
  const Tensor host_b = has_bias_ ? bias.on(Device::cpu(), MemoryCategory::workspace) : Tensor();
  if (placement.device.kind == DeviceKind::cpu) {
    packed_ =
        std::make_unique<cpu::PackedLinear>(host_w, host_b, placement.compute, activation, 128, placement.decoding);
    return;
  }
  on_cuda("linear", placement.device, placement.compute);
  check(placement.compute == DType::f32 || placement.compute == DType::bf16 || placement.compute == DType::f16,
        "linear on " + placement.device.str() + ": compute dtype " + std::string(dtype_name(placement.compute)) +
            " is not supported (f32, bf16, f16)");
  // Converted on the host (round to nearest even, as torch's .to()) and copied once.
  weight_ =
      host_w.to(placement.compute, MemoryCategory::workspace).to_device(placement.device, MemoryCategory::weights);
  if (has_bias_)
    bias_ = host_b.to(DType::f32, MemoryCategory::workspace).to_device(placement.device, MemoryCategory::weights);
}

Linear::~Linear() = default;

int64_t Linear::weight_bytes() const {
  if (packed_) return int64_t(packed_->bytes_read()) + (has_bias_ ? N_ * 4 : 0);
  return int64_t(weight_.nbytes()) + (bias_.defined() ? int64_t(bias_.nbytes()) : 0);
}

void linear_forward(Tensor& out, const Tensor& x, const cpu::PackedLinear& weight) {
  check_linear_shapes(out, x, weight.in_features(), weight.out_features());
  if (x.device().kind != DeviceKind::cpu || out.device().kind != DeviceKind::cpu)
    unsupported("linear (packed for the CPU)", x.device(), weight.compute_dtype());
  core::Span span(core::SpanKind::op, "linear");
  describe_span(span, x, weight.out_features(), weight.compute_dtype(), weight.has_bias());
  weight.forward(x.data<float>(), x.size(0), x.strides()[0], out.data<float>(), out.strides()[0]);
}

void linear_forward(Tensor& out, const Tensor& x, const Linear& weight) {
  if (weight.packed()) {
    linear_forward(out, x, *weight.packed());
    return;
  }
  check_linear_shapes(out, x, weight.in_features(), weight.out_features());
  check_device("linear", weight.device(), {&x, &out});
  core::Span span(core::SpanKind::op, "linear");
  describe_span(span, x, weight.out_features(), weight.compute_dtype(), weight.has_bias());
#if TACH_HAS_CUDA
  linear_forward_cuda(weight.device().index, out.data<float>(), out.strides()[0], x.data<float>(), x.strides()[0],
                      x.size(0), weight);
#else
  unsupported("linear", weight.device(), weight.compute_dtype());
#endif
}

}  // namespace tach::ops
