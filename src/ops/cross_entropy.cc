#include "ops/cross_entropy.h"

#include <algorithm>
#include <string>

#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

namespace {

// The checks allocate nothing unless they fail (ops/train_checks.h).
void check_labels(const char* op, const char* what, const Tensor& t, int64_t rows) {
  if (!t.defined() || t.dtype() != DType::i32 || t.dim() != 1 || t.numel() != rows || !dense(t))
    bad_tensor(op, what, t, "a contiguous i32 [" + std::to_string(rows) + "]");
}

// logits: [R, L]; says R and L.
void check_logits(const char* op, const char* what, const Tensor& logits, int64_t* R, int64_t* L) {
  if (!logits.defined() || logits.dtype() != DType::f32 || logits.dim() != 2 || !dense(logits))
    bad_tensor(op, what, logits, "a contiguous f32 [rows, labels]");
  *R = logits.size(0), *L = logits.size(1);
}

// A loss computed on the host into the device form's slots (a label outside the head threw already).
void write_loss(const Tensor& loss, double mean, int64_t L) {
  double* v = loss.data<double>();
  v[0] = mean, v[1] = -1, v[2] = 0, v[3] = double(L);
}

// The backward of `half` (0, or question answering's end column 1) of rows laid out as the CPU
// kernel's: dlogits + half, probs + half * R * L.
void backward_on_cuda([[maybe_unused]] const Tensor& dlogits, [[maybe_unused]] int64_t row_stride,
                      [[maybe_unused]] int64_t stride, [[maybe_unused]] const Tensor& probs,
                      [[maybe_unused]] const Tensor& labels, [[maybe_unused]] int64_t R, [[maybe_unused]] int64_t L,
                      [[maybe_unused]] float scale, [[maybe_unused]] int64_t half = 0) {
#if TACH_HAS_CUDA
  const Tensor k = Tensor::empty({1}, DType::f32, dlogits.device(), MemoryCategory::workspace);
  cross_entropy_backward_cuda(dlogits.device().index, dlogits.data<float>() + half, row_stride, stride,
                              probs.data<float>() + half * R * L, labels.data<int32_t>(), R, L, scale, k.data<float>());
#endif
}

void declare(core::Span& span, const OpCost& c, int64_t R, int64_t L) {
  if (!span.active()) return;
  span.set_cost(c.flops, c.bytes());
  span.set_detail(core::concat("[", R, ", ", L, "] f32"));
}

}  // namespace

OpCost cross_entropy_cost(int64_t R, int64_t L) {
  OpCost c;
  c.flops = 5.0 * double(R) * double(L);  // max, subtract, exp, sum, scale
  c.bytes_read = 4.0 * double(R) * double(L) + 4.0 * double(R);
  c.bytes_written = 4.0 * double(R) * double(L);
  return c;
}

OpCost cross_entropy_backward_cost(int64_t R, int64_t L) {
  OpCost c;
  c.flops = 3.0 * double(R) * double(L);  // subtract the one-hot, scale, accumulate
  c.bytes_read = 8.0 * double(R) * double(L) + 4.0 * double(R);
  c.bytes_written = 4.0 * double(R) * double(L);
  return c;
}

double cross_entropy_forward(const Tensor& probs, const Tensor& logits, const Tensor& labels) {
  // On a device: the loss-tensor form, then one copy back (a build without the backend names the op).
  if (logits.defined() && on_cuda("cross_entropy", logits.device(), DType::f32)) {
    const Tensor loss = Tensor::empty({kLossSlots}, DType::f64, logits.device(), MemoryCategory::workspace);
    cross_entropy_forward(loss, probs, logits, labels);
    return read_cross_entropy_loss(loss);
  }
  int64_t R = 0, L = 0;
  check_logits("cross_entropy", "logits", logits, &R, &L);
  expect_matrix("cross_entropy", "probs", probs, R, L);
  check_labels("cross_entropy", "labels", labels, R);
  check_device("cross_entropy", logits.device(), {&probs, &labels});
  core::Span span(core::SpanKind::op, "cross_entropy");
  declare(span, cross_entropy_cost(R, L), R, L);
  return cross_entropy_forward_cpu(probs.data<float>(), logits.data<float>(), L, 1, labels.data<int32_t>(), R, L);
}

void cross_entropy_forward(const Tensor& loss, const Tensor& probs, const Tensor& logits, const Tensor& labels) {
  int64_t R = 0, L = 0;
  check_logits("cross_entropy", "logits", logits, &R, &L);
  expect_matrix("cross_entropy", "probs", probs, R, L);
  check_labels("cross_entropy", "labels", labels, R);
  check_device("cross_entropy", logits.device(), {&probs, &labels});
  expect_f64_on("cross_entropy", "loss", loss, kLossSlots, logits.device());
  if (on_cuda("cross_entropy", logits.device(), DType::f32)) {
    core::Span span(core::SpanKind::op, "cross_entropy");
    declare(span, cross_entropy_cost(R, L), R, L);
#if TACH_HAS_CUDA
    const Tensor row_loss =
        Tensor::empty({std::max<int64_t>(R, 1)}, DType::f64, logits.device(), MemoryCategory::workspace);
    cross_entropy_forward_cuda(logits.device().index, probs.data<float>(), logits.data<float>(), L, 1,
                               labels.data<int32_t>(), R, L, row_loss.data<double>(), loss.data<double>(), 1.0, false);
#endif
    return;
  }
  write_loss(loss, cross_entropy_forward(probs, logits, labels), L);
}

double read_cross_entropy_loss(const Tensor& loss) {
  if (!loss.defined() || loss.dtype() != DType::f64 || loss.numel() != kLossSlots || !dense(loss))
    bad_tensor("cross_entropy", "loss", loss, "a contiguous f64 tensor of " + std::to_string(kLossSlots) + " elements");
  const Tensor host = loss.device().kind == DeviceKind::cpu ? loss : loss.to_device(Device::cpu());
  const double* v = host.data<double>();
  if (v[1] >= 0)
    throw Error("cross-entropy: label " + std::to_string(int64_t(v[2])) + " of row " + std::to_string(int64_t(v[1])) +
                " is outside the head's " + std::to_string(int64_t(v[3])) + " labels");
  return v[0];
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& probs, const Tensor& labels, float scale) {
  int64_t R = 0, L = 0;
  check_logits("cross_entropy_backward", "dlogits", dlogits, &R, &L);
  expect_matrix("cross_entropy_backward", "probs", probs, R, L);
  check_labels("cross_entropy_backward", "labels", labels, R);
  check_device("cross_entropy_backward", dlogits.device(), {&probs, &labels});
  const bool cuda = on_cuda("cross_entropy_backward", dlogits.device(), DType::f32);
  core::Span span(core::SpanKind::op, "cross_entropy_backward");
  declare(span, cross_entropy_backward_cost(R, L), R, L);
  if (cuda) {
    backward_on_cuda(dlogits, L, 1, probs, labels, R, L, scale);
    return;
  }
  cross_entropy_backward_cpu(dlogits.data<float>(), L, 1, probs.data<float>(), labels.data<int32_t>(), R, L, scale);
}

namespace {

// The span pair's shapes: logits [B * T, 2], start and end [B], probs [2, B, T]; says B and T.
void check_span_pair(const char* op, const Tensor& logits, const Tensor& probs, const Tensor& start, const Tensor& end,
                     int64_t* B, int64_t* T) {
  if (!start.defined() || start.dim() != 1 || start.numel() == 0)
    bad_tensor(op, "start positions", start, "i32 [batch]");
  *B = start.size(0);
  if (!logits.defined() || logits.dtype() != DType::f32 || logits.dim() != 2 || logits.size(1) != 2 ||
      logits.size(0) % *B != 0 || !dense(logits))
    bad_tensor(op, "logits", logits, "a contiguous f32 [" + std::to_string(*B) + " * tokens, 2] (start, end)");
  *T = logits.size(0) / *B;
  expect_f32(op, "probs", probs, 2 * *B * *T);
  check_labels(op, "start positions", start, *B);
  check_labels(op, "end positions", end, *B);
  check_device(op, logits.device(), {&probs, &start, &end});
}

}  // namespace

double span_cross_entropy_forward(const Tensor& probs, const Tensor& logits, const Tensor& start, const Tensor& end) {
  if (logits.defined() && on_cuda("cross_entropy", logits.device(), DType::f32)) {
    const Tensor loss = Tensor::empty({kLossSlots}, DType::f64, logits.device(), MemoryCategory::workspace);
    span_cross_entropy_forward(loss, probs, logits, start, end);
    return read_cross_entropy_loss(loss);
  }
  int64_t B = 0, T = 0;
  check_span_pair("cross_entropy", logits, probs, start, end, &B, &T);
  core::Span span(core::SpanKind::op, "cross_entropy");
  OpCost c = cross_entropy_cost(B, T);
  c += cross_entropy_cost(B, T);
  declare(span, c, 2 * B, T);
  // Each column is B rows of T logits, 2T apart, its elements 2 apart.
  const float* x = logits.data<float>();
  float* p = probs.data<float>();
  const double loss_start = cross_entropy_forward_cpu(p, x, 2 * T, 2, start.data<int32_t>(), B, T);
  const double loss_end = cross_entropy_forward_cpu(p + B * T, x + 1, 2 * T, 2, end.data<int32_t>(), B, T);
  return (loss_start + loss_end) / 2;
}

void span_cross_entropy_forward(const Tensor& loss, const Tensor& probs, const Tensor& logits, const Tensor& start,
                                const Tensor& end) {
  int64_t B = 0, T = 0;
  check_span_pair("cross_entropy", logits, probs, start, end, &B, &T);
  expect_f64_on("cross_entropy", "loss", loss, kLossSlots, logits.device());
  if (on_cuda("cross_entropy", logits.device(), DType::f32)) {
    core::Span span(core::SpanKind::op, "cross_entropy");
    OpCost c = cross_entropy_cost(B, T);
    c += cross_entropy_cost(B, T);
    declare(span, c, 2 * B, T);
#if TACH_HAS_CUDA
    // Each half's mean at weight 1/2, added in order: the CPU's (start + end) / 2 to the bit.
    const Tensor row_loss = Tensor::empty({B}, DType::f64, logits.device(), MemoryCategory::workspace);
    const float* x = logits.data<float>();
    float* p = probs.data<float>();
    double* out = loss.data<double>();
    const int dev = logits.device().index;
    cross_entropy_forward_cuda(dev, p, x, 2 * T, 2, start.data<int32_t>(), B, T, row_loss.data<double>(), out, 0.5,
                               false);
    cross_entropy_forward_cuda(dev, p + B * T, x + 1, 2 * T, 2, end.data<int32_t>(), B, T, row_loss.data<double>(), out,
                               0.5, true);
#endif
    return;
  }
  write_loss(loss, span_cross_entropy_forward(probs, logits, start, end), T);
}

void span_cross_entropy_backward(const Tensor& dlogits, const Tensor& probs, const Tensor& start, const Tensor& end,
                                 float scale) {
  int64_t B = 0, T = 0;
  check_span_pair("cross_entropy_backward", dlogits, probs, start, end, &B, &T);
  core::Span span(core::SpanKind::op, "cross_entropy_backward");
  OpCost c = cross_entropy_backward_cost(B, T);
  c += cross_entropy_backward_cost(B, T);
  declare(span, c, 2 * B, T);
  float* d = dlogits.data<float>();
  const float* p = probs.data<float>();
  if (on_cuda("cross_entropy_backward", dlogits.device(), DType::f32)) {
    backward_on_cuda(dlogits, 2 * T, 2, probs, start, B, T, scale / 2, 0);
    backward_on_cuda(dlogits, 2 * T, 2, probs, end, B, T, scale / 2, 1);
    return;
  }
  cross_entropy_backward_cpu(d, 2 * T, 2, p, start.data<int32_t>(), B, T, scale / 2);
  cross_entropy_backward_cpu(d + 1, 2 * T, 2, p + B * T, end.data<int32_t>(), B, T, scale / 2);
}

}  // namespace tach::ops
