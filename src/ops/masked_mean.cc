// The masked mean's checks, costs and dispatch; the kernels are in masked_mean_cpu.cc and
// masked_mean_cuda.cu.
#include "ops/masked_mean.h"

#include <string>

#include "core/trace.h"
#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost masked_mean_cost(int64_t B, int64_t T, int64_t C, DType x_dtype) {
  OpCost c;
  c.flops = double(B * T * C) + double(B * C);  // an add per kept element (at most), a division per output
  c.bytes_read = double(dtype_bytes(x_dtype, size_t(B * T * C))) + double(B * T) * 4;
  c.bytes_written = double(B * C) * 4;
  return c;
}

OpCost masked_mean_backward_cost(int64_t B, int64_t T, int64_t C) {
  OpCost c;
  c.flops = double(B * T * C) * 2;                                               // a division and an add per element
  c.bytes_read = double(B * T * C) * 4 + double(B * C) * 4 + double(B * T) * 4;  // dx (accumulated), dout, mask
  c.bytes_written = double(B * T * C) * 4;
  return c;
}

namespace {

// B, T from the mask [B, T] i32; C from the per-row tensor [B, C]; x (or dx) [B * T, C] or [B, T, C]
// in x_dtype (f32; an activation dtype for the forward's x on CUDA).
void check_masked_mean(const char* op, const char* rows_name, const Tensor& rows, const char* x_name, const Tensor& x,
                       const Tensor& mask, int64_t& B, int64_t& T, int64_t& C, DType x_dtype = DType::f32) {
  if (!mask.defined() || mask.dtype() != DType::i32 || mask.dim() != 2 || !dense(mask))
    bad_tensor(op, "mask", mask, "a contiguous i32 [B, T]");
  B = mask.size(0), T = mask.size(1);
  if (!rows.defined() || rows.dim() != 2 || rows.size(0) != B)
    bad_tensor(op, rows_name, rows, "an f32 [" + std::to_string(B) + ", C] (the mask's B)");
  C = rows.size(1);
  expect_matrix(op, rows_name, rows, B, C);
  const bool flat = x.defined() && x.dim() == 2 && x.size(0) == B * T && x.size(1) == C;
  const bool batched = x.defined() && x.dim() == 3 && x.size(0) == B && x.size(1) == T && x.size(2) == C;
  if (!flat && !batched)
    bad_tensor(op, x_name, x,
               "an f32 [" + std::to_string(B * T) + ", " + std::to_string(C) + "] (the mask's B * T rows of C)");
  if (x_dtype == DType::f32) expect_f32(op, x_name, x, B * T * C);
  else expect_activations(op, x_name, x, B * T * C, x_dtype);
  check_device(op, mask.device(), {&rows, &x});
}

void declare(core::Span& span, const OpCost& c, int64_t B, int64_t T, int64_t C, DType dtype = DType::f32) {
  if (!span.active()) return;
  span.set_cost(c.flops, c.bytes());
  span.set_detail(core::concat("[", B, ", ", T, ", ", C, "] ", dtype_name(dtype)));
}

}  // namespace

void masked_mean_forward(const Tensor& out, const Tensor& x, const Tensor& mask) {
  constexpr const char* kOp = "masked_mean";
  int64_t B = 0, T = 0, C = 0;
  const DType A = x.defined() ? x.dtype() : DType::f32;
  check_masked_mean(kOp, "out", out, "x", x, mask, B, T, C, is_activation_dtype(A) ? A : DType::f32);
  check_activation_dtype(kOp, mask.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda(kOp, mask.device(), A);
  core::Span span(core::SpanKind::op, kOp);
  declare(span, masked_mean_cost(B, T, C, A), B, T, C, A);
#if TACH_HAS_CUDA
  if (cuda)
    return masked_mean_forward_cuda(mask.device().index, out.data<float>(), x.raw(), A, mask.data<int32_t>(), B, T, C);
#endif
  masked_mean_forward_cpu(out.data<float>(), x.data<float>(), mask.data<int32_t>(), B, T, C);
}

void masked_mean_backward(const Tensor& dx, const Tensor& dout, const Tensor& mask) {
  constexpr const char* kOp = "masked_mean_backward";
  int64_t B = 0, T = 0, C = 0;
  check_masked_mean(kOp, "dout", dout, "dx", dx, mask, B, T, C);
  [[maybe_unused]] const bool cuda = on_cuda(kOp, mask.device(), DType::f32);
  core::Span span(core::SpanKind::op, kOp);
  declare(span, masked_mean_backward_cost(B, T, C), B, T, C);
#if TACH_HAS_CUDA
  if (cuda)
    return masked_mean_backward_cuda(mask.device().index, dx.data<float>(), dout.data<float>(), mask.data<int32_t>(), B,
                                     T, C);
#endif
  masked_mean_backward_cpu(dx.data<float>(), dout.data<float>(), mask.data<int32_t>(), B, T, C);
}

}  // namespace tach::ops
