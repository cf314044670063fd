#include "ops/silu_gate.h"

#include "ops/dispatch.h"

namespace tach::ops {

OpCost silu_gate_cost(int64_t N, int64_t I) {
  OpCost c;
  c.flops = double(N * I) * 6;
  c.bytes_read = double(N * I) * 8;
  c.bytes_written = double(N * I) * 4;
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

int64_t checked_rows(const char* op, const Tensor& gate_up, const Tensor& other, int64_t other_cols) {
  check(gate_up.dtype() == DType::f32 && gate_up.is_contiguous() && gate_up.size(-1) % 2 == 0,
        std::string(op) + ": gate_up must be contiguous f32 [N, 2I], got " + gate_up.describe());
  const int64_t I = gate_up.size(-1) / 2, N = gate_up.numel() / (2 * I == 0 ? 1 : 2 * I);
  check(other.dtype() == DType::f32 && other.is_contiguous() && other.numel() == N * other_cols * I,
        std::string(op) + ": " + other.describe() + " does not match gate_up " + gate_up.describe());
  return N;
}

}  // namespace

void silu_gate_forward(Tensor& out, const Tensor& gate_up, GateActivation act) {
  const char* name = gate_op_name(act);
  const int64_t N = checked_rows(name, gate_up, out, 1), I = gate_up.size(-1) / 2;
  core::Span span(core::SpanKind::op, name);
  if (span.active()) {
    const OpCost c = silu_gate_cost(N, I);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", N, ", 2x", I, "] f32"));
  }
  check_device(name, gate_up.device(), {&out});
#if TACH_HAS_CUDA
  if (on_cuda(name, gate_up.device(), gate_up.dtype())) {
    gate_forward_cuda(gate_up.device().index, act, out.data<float>(), gate_up.data<float>(), N, I);
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
  const int64_t N = checked_rows(name, gate_up, dout, 1), I = gate_up.size(-1) / 2;
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
