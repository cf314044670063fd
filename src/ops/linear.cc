#include "ops/linear.h"

#include "cpu/nf4_gemm.h"
#include "ops/dispatch.h"
#include "ops/linear_quantized.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost linear_cost(int64_t M, int64_t N, int64_t K, DType compute, bool has_bias, DType activation) {
  OpCost c;
  c.flops = 2.0 * double(M) * double(N) * double(K) + (has_bias ? double(M * N) : 0);
  // The weight as the kernel reads it: int8 with an f32 scale per output row; NF4's 4-bit codes
  // with the f32 absmax of each 64-weight block (cpu/nf4_linear.h, ops/linear_quantized.h).
  double weight = double(dtype_bytes(compute, size_t(N * K)));
  if (compute == DType::i8) weight += double(N) * 4;
  if (compute == DType::nf4) weight += double(N * K) / 64 * 4;
  c.bytes_read = double(dtype_bytes(activation, size_t(M * K))) + weight + (has_bias ? double(N) * 4 : 0);
  c.bytes_written = double(dtype_bytes(activation, size_t(M * N)));
  return c;
}

OpCost linear_gated_cost(int64_t M, int64_t N, int64_t I, DType compute, bool has_bias, DType activation) {
  OpCost c = linear_cost(M, N, I, compute, has_bias, activation);
  c.flops += silu_gate_cost(M, I, activation).flops;
  c.bytes_read += double(dtype_bytes(activation, size_t(M * I)));  // gate|up [M, 2I] read where act [M, I] was
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

// x and out in one `activation` dtype, with the weight's features, unit column strides.
void check_linear_shapes(const Tensor& out, const Tensor& x, int64_t in_features, int64_t out_features) {
  check(x.dim() == 2 && x.strides()[1] == 1, "linear: x must be [M, K] with unit column stride, got " + x.describe());
  check(x.size(1) == in_features, "linear: x " + x.describe() + " has " + std::to_string(x.size(1)) +
                                      " features, the weight expects " + std::to_string(in_features));
  check(out.dim() == 2 && out.size(0) == x.size(0) && out.size(1) == out_features && out.strides()[1] == 1,
        "linear: out " + out.describe() + " must be [" + std::to_string(x.size(0)) + ", " +
            std::to_string(out_features) + "] with unit column stride");
  check(out.dtype() == x.dtype(), "linear: x is " + std::string(dtype_name(x.dtype())) + " and out " +
                                      std::string(dtype_name(out.dtype())) + "; both must be in one activation dtype");
}

// The activation dtypes a GPU layer takes: f32 always (rounded to its GEMM's dtype), and its own
// activation_dtype().
void check_activation_dtype(const Tensor& x, const Linear& layer) {
  const DType a = x.dtype(), own = layer.activation_dtype();
  if (a == DType::f32 || a == own) return;
  throw Error("linear on " + layer.device().str() + ": activations in " + std::string(dtype_name(a)) +
              ", but this layer (weights " + std::string(dtype_name(layer.compute_dtype())) + ") takes " +
              std::string(dtype_name(own)) + (own == DType::f32 ? "" : " or f32") +
              " activations: allocate them in the layer's activation_dtype()");
}

void describe_span(core::Span& span, const Tensor& x, int64_t N, DType compute, bool has_bias) {
  if (!span.active()) return;
  const OpCost c = linear_cost(x.size(0), N, x.size(1), compute, has_bias, x.dtype());
  span.set_cost(c.flops, c.bytes());
  span.set_detail(core::concat("x [", x.size(0), ", ", x.size(1), "] ", dtype_name(x.dtype()), " · W [", N, ", ",
                               x.size(1), "]ᵀ ", dtype_name(compute)));
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
  check(!placement.tf32 || placement.device.kind == DeviceKind::cuda,
        "linear on " + placement.device.str() + ": TF32 runs on NVIDIA GPUs only (no CPU GEMM has it)");
  if (placement.device.kind == DeviceKind::cpu) {
    packed_ =
        std::make_unique<cpu::PackedLinear>(host_w, host_b, placement.compute, activation, 128, placement.decoding);
    return;
  }
  on_cuda("linear", placement.device, placement.compute);
  check(placement.compute == DType::f32 || placement.compute == DType::bf16 || placement.compute == DType::f16 ||
            placement.compute == DType::i8 || placement.compute == DType::nf4,
        "linear on " + placement.device.str() + ": compute dtype " + std::string(dtype_name(placement.compute)) +
            " is not supported (f32, bf16, f16, int8, nf4)");
  check(!placement.tf32 || placement.compute == DType::f32, "linear on " + placement.device.str() +
                                                                ": TF32 applies to f32 GEMMs, not " +
                                                                std::string(dtype_name(placement.compute)));
  place_on_cuda(host_w);
  if (!has_bias_) return;
  bias_ = host_b.to(DType::f32, MemoryCategory::workspace).to_device(placement.device, MemoryCategory::weights);
  if (activation_dtype() != DType::f32)
    activation_bias_ =
        host_b.to(activation_dtype(), MemoryCategory::workspace).to_device(placement.device, MemoryCategory::weights);
}

void Linear::place_on_cuda(const Tensor& host_w) {
  const Device device = placement_.device;
  if (placement_.compute == DType::nf4 && N_ * K_ % cpu::kNf4Block != 0) {
    // A weight that does not split into 64-blocks (a small head) stays unquantized, as
    // bitsandbytes users keep such modules out of quantization: in bf16, the activations' dtype
    // of the layers around it, so its spans say bf16.
    placement_.compute = DType::bf16;
  }
  if (placement_.compute == DType::i8 || placement_.compute == DType::nf4) {
    const QuantizedWeight q =
        placement_.compute == DType::i8 ? quantize_int8_weight(host_w) : quantize_nf4_weight(host_w);
    weight_ = q.codes.to_device(device, MemoryCategory::weights);
    scales_ = q.scales.to_device(device, MemoryCategory::weights);
    return;
  }
  // Converted on the host (round to nearest even, as torch's .to()) and copied once.
  weight_ = host_w.to(placement_.compute, MemoryCategory::workspace).to_device(device, MemoryCategory::weights);
}

Linear::~Linear() = default;

DType Linear::activation_dtype() const {
  if (packed_) return DType::f32;
  switch (placement_.compute) {
    case DType::bf16:
    case DType::i8:
    case DType::nf4: return DType::bf16;
    case DType::f16: return DType::f16;
    default: return DType::f32;
  }
}

int64_t Linear::weight_bytes() const {
  if (packed_) return int64_t(packed_->bytes_read()) + (has_bias_ ? N_ * 4 : 0);
  // One bias per call: the f32 one (a GEMV, or an f32 y) or its 16-bit copy (a 16-bit GEMM's y).
  return int64_t(weight_.nbytes()) + (scales_.defined() ? int64_t(scales_.nbytes()) : 0) +
         (bias_.defined() ? int64_t(bias_.nbytes()) : 0);
}

void linear_forward(Tensor& out, const Tensor& x, const cpu::PackedLinear& weight) {
  check_linear_shapes(out, x, weight.in_features(), weight.out_features());
  if (x.device().kind != DeviceKind::cpu || out.device().kind != DeviceKind::cpu)
    unsupported("linear (packed for the CPU)", x.device(), weight.compute_dtype());
  if (x.dtype() != DType::f32) unsupported("linear", x.device(), x.dtype());  // the CPU's activations are f32
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
  check_activation_dtype(x, weight);
  core::Span span(core::SpanKind::op, "linear");
  describe_span(span, x, weight.out_features(), weight.compute_dtype(), weight.has_bias());
#if TACH_HAS_CUDA
  linear_forward_cuda(weight.device().index, out.raw(), out.strides()[0], x.raw(), x.strides()[0], x.size(0), x.dtype(),
                      weight);
#else
  unsupported("linear", weight.device(), weight.compute_dtype());
#endif
}

namespace {

// gate_up [M, 2I] for a layer of I inputs, out [M, N], one dtype, unit column strides.
void check_gated_shapes(const Tensor& out, const Tensor& gate_up, const Linear& weight) {
  const int64_t I = weight.in_features(), N = weight.out_features();
  check(gate_up.dim() == 2 && gate_up.strides()[1] == 1 && gate_up.size(1) == 2 * I,
        "linear with the gate: gate_up " + gate_up.describe() + " must be [M, " + std::to_string(2 * I) +
            "] (gate then up, for the layer's " + std::to_string(I) + " inputs) with unit column stride");
  check(out.dim() == 2 && out.size(0) == gate_up.size(0) && out.size(1) == N && out.strides()[1] == 1,
        "linear with the gate: out " + out.describe() + " must be [" + std::to_string(gate_up.size(0)) + ", " +
            std::to_string(N) + "] with unit column stride");
  check(out.dtype() == gate_up.dtype(), "linear with the gate: gate_up is " + std::string(dtype_name(gate_up.dtype())) +
                                            " and out " + std::string(dtype_name(out.dtype())) +
                                            "; both must be in one activation dtype");
}

}  // namespace

void linear_forward_gated(Tensor& out, const Tensor& gate_up, const Linear& weight, GateActivation activation,
                          Tensor* act) {
  check_gated_shapes(out, gate_up, weight);
  const int64_t M = gate_up.size(0), I = weight.in_features();
#if TACH_HAS_CUDA
  if (!weight.packed() && gate_up.device() == weight.device() && out.device() == weight.device() &&
      linear_gated_fits_cuda(gate_up.raw(), gate_up.strides()[0], M, gate_up.dtype(), weight, activation)) {
    check_activation_dtype(gate_up, weight);
    core::Span span(core::SpanKind::op, "linear");
    if (span.active()) {
      const OpCost c =
          linear_gated_cost(M, weight.out_features(), I, weight.compute_dtype(), weight.has_bias(), gate_up.dtype());
      span.set_cost(c.flops, c.bytes());
      span.set_detail(core::concat(gate_op_name(activation), "(gate|up [", M, ", 2x", I, "] ",
                                   dtype_name(gate_up.dtype()), ") · W [", weight.out_features(), ", ", I, "]ᵀ ",
                                   dtype_name(weight.compute_dtype())));
    }
    linear_forward_gated_cuda(weight.device().index, out.raw(), out.strides()[0], gate_up.raw(), gate_up.strides()[0],
                              M, gate_up.dtype(), weight, activation);
    return;
  }
#endif
  // The gate op, then the layer: the same numbers in two steps (each its own span).
  Tensor own;
  if (act == nullptr || !act->defined()) {
    own = Tensor::empty({M, I}, gate_up.dtype(), gate_up.device());
    act = &own;
  }
  silu_gate_forward(*act, gate_up, activation);
  linear_forward(out, *act, weight);
}

}  // namespace tach::ops

namespace tach::ops {

namespace {

// The device a training weight lives on: the master's, or the NF4 codes'.
Device weight_device(TrainLinearWeight W) {
  if (W.f32) return W.f32->device();
  return W.nf4->parts.empty() ? Device::cpu() : W.nf4->parts.front().codes.device();
}

// N and K of a training weight, checked: an f32 master must be a contiguous f32 [N, K].
void check_train_weight(const char* op, TrainLinearWeight W, int64_t N, int64_t K) {
  if (W.f32) {
    expect_matrix(op, "W", *W.f32, N, K);
    return;
  }
  if (!W.nf4) throw Error(std::string(op) + ": no weight");
  if (W.nf4->rows != N || W.nf4->cols != K)
    throw Error(std::string(op) + ": the NF4 weight is [" + std::to_string(W.nf4->rows) + ", " +
                std::to_string(W.nf4->cols) + "], the operands need [" + std::to_string(N) + ", " + std::to_string(K) +
                "]");
  for (const cpu::Nf4Tensor& part : W.nf4->parts)
    check_device(op, weight_device(W), {&part.codes, &part.qabsmax, &part.absmax2});
}

const float* data_or_null(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }
float* mutable_or_null(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }

}  // namespace

void linear_forward_train(const Tensor& y, const Tensor& x, TrainLinearWeight W, const Tensor& b) {
  const char* op = W.nf4 ? "linear_nf4" : "linear";
  if (!x.defined() || x.dim() != 2) bad_tensor(op, "x", x, "an f32 [M, K]");
  const int64_t M = x.shape()[0], K = x.shape()[1];
  const int64_t N = W.f32 ? (W.f32->dim() == 2 ? W.f32->shape()[0] : -1) : W.nf4->rows;
  expect_matrix(op, "x", x, M, K);
  check_train_weight(op, W, N, K);
  expect_matrix(op, "y", y, M, N);
  expect_f32_or_none(op, "b", b, N);
  const Device device = x.device();
  check_device(op, device, {&y, &b});
  if (!(weight_device(W) == device))
    throw Error(std::string(op) + ": the weight is on " + weight_device(W).str() + ", x on " + device.str());
  [[maybe_unused]] const bool cuda = on_cuda(op, device, W.nf4 ? DType::nf4 : DType::f32);
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    const OpCost c = linear_cost(M, N, K, W.nf4 ? DType::nf4 : DType::f32, b.defined());
    span.set_cost(c.flops, c.bytes());
  }
#if TACH_HAS_CUDA
  if (cuda) {
    if (W.nf4)
      nf4_linear_forward_cuda(device.index, y.data<float>(), x.data<float>(), *W.nf4, data_or_null(b), M, N, K);
    else
      linear_forward_train_cuda(device.index, y.data<float>(), x.data<float>(), W.f32->data<float>(), data_or_null(b),
                                M, N, K);
    return;
  }
#endif
  if (W.nf4) cpu::nf4_linear_forward(y.data<float>(), x.data<float>(), *W.nf4, data_or_null(b), M, N, K);
  else linear_forward_cpu(y.data<float>(), x.data<float>(), W.f32->data<float>(), data_or_null(b), M, N, K);
}

void linear_backward(const Tensor& dx, const Tensor& dW, const Tensor& db, const Tensor& dy, const Tensor& x,
                     TrainLinearWeight W) {
  const char* op = W.nf4 ? "linear_nf4_backward" : "linear_backward";
  if (!dy.defined() || dy.dim() != 2) bad_tensor(op, "dy", dy, "an f32 [M, N]");
  if (!x.defined() || x.dim() != 2) bad_tensor(op, "x", x, "an f32 [M, K]");
  const int64_t M = dy.shape()[0], N = dy.shape()[1], K = x.shape()[1];
  expect_matrix(op, "dy", dy, M, N);
  expect_matrix(op, "x", x, M, K);
  check_train_weight(op, W, N, K);
  if (dx.defined()) expect_matrix(op, "dx", dx, M, K);
  if (dW.defined()) {
    if (W.nf4) throw Error(std::string(op) + ": an NF4 weight is frozen and has no gradient");
    expect_matrix(op, "dW", dW, N, K);
  }
  expect_f32_or_none(op, "db", db, N);
  const Device device = dy.device();
  check_device(op, device, {&x, &dx, &dW, &db});
  if (!(weight_device(W) == device))
    throw Error(std::string(op) + ": the weight is on " + weight_device(W).str() + ", dy on " + device.str());
  [[maybe_unused]] const bool cuda = on_cuda(op, device, W.nf4 ? DType::nf4 : DType::f32);
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    OpCost c = linear_backward_cost(M, N, K, db.defined(), dx.defined(), dW.defined());
    // The NF4 weight dx reads is 4-bit.
    if (W.nf4) c.bytes_read += double(dtype_bytes(DType::nf4, size_t(N * K))) - 4.0 * double(N * K);
    span.set_cost(c.flops, c.bytes());
  }
#if TACH_HAS_CUDA
  if (cuda) {
    if (!W.nf4) {
      linear_backward_cuda(device.index, mutable_or_null(dx), mutable_or_null(dW), mutable_or_null(db),
                           dy.data<float>(), x.data<float>(), W.f32->data<float>(), M, N, K);
      return;
    }
    if (dx.defined()) nf4_linear_backward_dx_cuda(device.index, dx.data<float>(), dy.data<float>(), *W.nf4, M, N, K);
    if (db.defined()) linear_bias_grad_cuda(device.index, db.data<float>(), dy.data<float>(), M, N);
    return;
  }
#endif
  if (!W.nf4) {
    linear_backward_cpu(mutable_or_null(dx), mutable_or_null(dW), mutable_or_null(db), dy.data<float>(),
                        x.data<float>(), W.f32->data<float>(), M, N, K);
    return;
  }
  if (dx.defined()) cpu::nf4_linear_backward_dx(dx.data<float>(), dy.data<float>(), *W.nf4, M, N, K);
  if (db.defined())
    linear_backward_cpu(nullptr, nullptr, db.data<float>(), dy.data<float>(), x.data<float>(), nullptr, M, N, K);
}

}  // namespace tach::ops
