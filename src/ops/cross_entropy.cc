#include "ops/cross_entropy.h"

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
  int64_t R = 0, L = 0;
  check_logits("cross_entropy", "logits", logits, &R, &L);
  expect_matrix("cross_entropy", "probs", probs, R, L);
  check_labels("cross_entropy", "labels", labels, R);
  check_device("cross_entropy", logits.device(), {&probs, &labels});
  if (on_cuda("cross_entropy", logits.device(), DType::f32)) unsupported("cross_entropy", logits.device(), DType::f32);
  core::Span span(core::SpanKind::op, "cross_entropy");
  declare(span, cross_entropy_cost(R, L), R, L);
  return cross_entropy_forward_cpu(probs.data<float>(), logits.data<float>(), L, 1, labels.data<int32_t>(), R, L);
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& probs, const Tensor& labels, float scale) {
  int64_t R = 0, L = 0;
  check_logits("cross_entropy_backward", "dlogits", dlogits, &R, &L);
  expect_matrix("cross_entropy_backward", "probs", probs, R, L);
  check_labels("cross_entropy_backward", "labels", labels, R);
  check_device("cross_entropy_backward", dlogits.device(), {&probs, &labels});
  if (on_cuda("cross_entropy_backward", dlogits.device(), DType::f32))
    unsupported("cross_entropy_backward", dlogits.device(), DType::f32);
  core::Span span(core::SpanKind::op, "cross_entropy_backward");
  declare(span, cross_entropy_backward_cost(R, L), R, L);
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
  if (on_cuda(op, logits.device(), DType::f32)) unsupported(op, logits.device(), DType::f32);
}

}  // namespace

double span_cross_entropy_forward(const Tensor& probs, const Tensor& logits, const Tensor& start, const Tensor& end) {
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
  cross_entropy_backward_cpu(d, 2 * T, 2, p, start.data<int32_t>(), B, T, scale / 2);
  cross_entropy_backward_cpu(d + 1, 2 * T, 2, p + B * T, end.data<int32_t>(), B, T, scale / 2);
}

}  // namespace tach::ops
