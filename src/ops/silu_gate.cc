#include "ops/silu_gate.h"

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"

namespace tach::ops {

OpCost silu_gate_cost(int64_t N, int64_t I, DType dtype) {
  OpCost c;
  c.flops = double(N * I) * 6;
  c.bytes_read = double(dtype_bytes(dtype, size_t(2 * N * I)));
  c.bytes_written = double(dtype_bytes(dtype, size_t(N * I)));
  return c;
}

OpCost silu_gate_backward_cost(int64_t N, int64_t I) {
  OpCost c;
  c.flops = double(N * I) * 10;
  c.bytes_read = double(N * I) * 12;
  c.bytes_written = double(N * I) * 8;
  return c;
}

const char* gate_op_name(GateActivation act, bool backward) {
  if (act == GateActivation::silu) return backward ? "silu_gate_backward" : "silu_gate";
  if (act == GateActivation::gelu) return backward ? "gelu_gate_backward" : "gelu_gate";
  return backward ? "gelu_tanh_gate_backward" : "gelu_tanh_gate";
}

namespace {

// gate_up [N, 2I] and `other` ([N, I]) in one activation dtype, or both f32 (f32_only: the backward).
int64_t checked_rows(const char* op, const Tensor& gate_up, const Tensor& other, int64_t other_cols,
                     bool f32_only = false) {
  check((f32_only ? gate_up.dtype() == DType::f32 : is_activation_dtype(gate_up.dtype())) && gate_up.is_contiguous() &&
            gate_up.size(-1) % 2 == 0,
        std::string(op) + ": gate_up must be contiguous " + (f32_only ? "f32" : "f32, bf16 or f16") + " [N, 2I], got " +
            gate_up.describe());
  const int64_t I = gate_up.size(-1) / 2, N = gate_up.numel() / (2 * I == 0 ? 1 : 2 * I);
  expect_activation_dtype(op, "out", other, gate_up.dtype());
  check(other.is_contiguous() && other.numel() == N * other_cols * I,
        std::string(op) + ": " + other.describe() + " does not match gate_up " + gate_up.describe());
  return N;
}

}  // namespace

void silu_gate_forward(Tensor& out, const Tensor& gate_up, GateActivation act) {
  const char* name = gate_op_name(act);
  const int64_t N = checked_rows(name, gate_up, out, 1), I = gate_up.size(-1) / 2;
  const DType A = gate_up.dtype();
  check_device(name, gate_up.device(), {&out});
  check_activation_dtype(name, gate_up.device(), A);
  core::Span span(core::SpanKind::op, name);
  if (span.active()) {
    const OpCost c = silu_gate_cost(N, I, A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", 2x", I, "] ", dtype_name(A)));
  }
#if TACH_HAS_CUDA
  if (on_cuda(name, gate_up.device(), A)) {
    gate_forward_cuda(gate_up.device().index, act, A, out.raw(), gate_up.raw(), N, I);
    return;
  }
#else
  on_cuda(name, gate_up.device(), gate_up.dtype());
#endif
  switch (act) {
    case GateActivation::silu: silu_gate_forward_cpu(out.data<float>(), gate_up.data<float>(), N, I); return;
    case GateActivation::gelu_tanh: gelu_tanh_gate_forward_cpu(out.data<float>(), gate_up.data<float>(), N, I); return;
    case GateActivation::gelu: gelu_gate_forward_cpu(out.data<float>(), gate_up.data<float>(), N, I); return;
  }
}

void silu_gate_backward(Tensor& d_gate_up, const Tensor& gate_up, const Tensor& dout, GateActivation act) {
  const char* name = gate_op_name(act, true);
  const int64_t N = checked_rows(name, gate_up, dout, 1, true), I = gate_up.size(-1) / 2;
  check(d_gate_up.numel() == gate_up.numel() && d_gate_up.dtype() == DType::f32 && d_gate_up.is_contiguous(),
        std::string(name) + ": d_gate_up " + d_gate_up.describe() + " does not match gate_up " + gate_up.describe());
  check_device(name, gate_up.device(), {&d_gate_up, &dout});
  [[maybe_unused]] const bool cuda = on_cuda(name, gate_up.device(), gate_up.dtype());
  core::Span span(core::SpanKind::op, name);
  if (span.active()) {
    const OpCost c = silu_gate_backward_cost(N, I);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", 2x", I, "] f32"));
  }
#if TACH_HAS_CUDA
  if (cuda)
    return gate_backward_cuda(gate_up.device().index, act, d_gate_up.data<float>(), gate_up.data<float>(),
                              dout.data<float>(), N, I);
#endif
  if (act == GateActivation::gelu_tanh)
    gelu_tanh_gate_backward_cpu(d_gate_up.data<float>(), gate_up.data<float>(), dout.data<float>(), N, I);
  else if (act == GateActivation::gelu)
    gelu_gate_backward_cpu(d_gate_up.data<float>(), gate_up.data<float>(), dout.data<float>(), N, I);
  else silu_gate_backward_cpu(d_gate_up.data<float>(), gate_up.data<float>(), dout.data<float>(), N, I);
}

}  // namespace tach::ops
