#include "ops/causal_attention.h"

#include "ops/dispatch.h"

#include <algorithm>

#include "core/trace.h"
#include "tach/error.h"

namespace tach::ops {

KeyRange key_range(const CausalAttentionArgs& a, int64_t i) {
  const int64_t Tk = a.past + a.Tq, P = a.past + i;  // the query's own key index
  if (a.causal) return {a.window > 0 ? std::max<int64_t>(0, P + 1 - a.window) : 0, P + 1};
  if (a.window <= 0) return {0, Tk};
  return {std::max<int64_t>(0, P - a.window), std::min(Tk, P + a.window + 1)};
}

int64_t attention_row_block(const CausalAttentionArgs& a, bool backward) {
  constexpr int64_t kRows = 64;
  // Splitting 128 rows or fewer saves a quarter of the forward's scores at most, and two small
  // GEMMs cost more than that (measured: Qwen2.5-0.5B-sized b1 x 128, 4% slower); the backward,
  // with four GEMMs per block, gains even there (3% faster).
  return !backward && a.Tq <= 2 * kRows ? std::max<int64_t>(a.Tq, 1) : kRows;
}

int64_t attention_scores_computed(const CausalAttentionArgs& a, bool backward) {
  const int64_t block = attention_row_block(a, backward);
  int64_t n = 0;
  for (int64_t i0 = 0; i0 < a.Tq; i0 += block) {
    const int64_t i1 = std::min(a.Tq, i0 + block);
    n += (i1 - i0) * (key_range(a, i1 - 1).end - key_range(a, i0).first);
  }
  return n;
}

OpCost causal_attention_cost(const CausalAttentionArgs& a) {
  const double scores = double(attention_scores_computed(a)), Tk = double(a.past + a.Tq);
  OpCost c;
  // Two GEMMs of 2*D per computed score, and ~5 flops per score for scale, mask and softmax.
  c.flops = double(a.B * a.H) * scores * (4.0 * double(a.D) + 5.0);
  c.bytes_read = double(a.B) * (double(a.Tq * a.H * a.D) + 2.0 * Tk * double(a.KVH * a.D)) * 4 + double(a.B) * Tk * 4;
  c.bytes_written = double(a.B * a.Tq * a.H * a.D) * 4;
  return c;
}

OpCost causal_attention_backward_cost(const CausalAttentionArgs& a) {
  const double scores = double(attention_scores_computed(a, true)), T = double(a.Tq);
  OpCost c;
  // Four GEMMs of 2*D per computed score (dV, dP, dQ, dK) and ~4 flops per score for the softmax's backward.
  c.flops = double(a.B * a.H) * scores * (8.0 * double(a.D) + 4.0);
  c.bytes_read =
      double(a.B) * (2.0 * T * double(a.H * a.D) + 2.0 * T * double(a.KVH * a.D)) * 4 + double(a.B * a.H) * scores * 4;
  c.bytes_written = double(a.B) * (T * double(a.H * a.D) + 2.0 * T * double(a.KVH * a.D)) * 4;
  return c;
}

namespace {

void check_args(const CausalAttentionArgs& a, bool training) {
  check(a.B > 0 && a.Tq > 0 && a.H > 0 && a.KVH > 0 && a.D > 0 && a.H % a.KVH == 0,
        "causal_attention: " + std::to_string(a.H) + " query heads cannot share " + std::to_string(a.KVH) +
            " key/value heads (or an extent is zero)");
  check(!training || a.past == 0, "causal_attention: training runs whole sequences, without a cache");
  check(!a.device_past || (a.device.kind == DeviceKind::cuda && a.causal),
        "causal_attention: a cache length on the device is for causal attention on CUDA");
}

}  // namespace

void causal_attention_forward(float* out, const float* q, const float* k, const float* v, const int32_t* key_mask,
                              const CausalAttentionArgs& a) {
  check_args(a, false);
  core::Span span(core::SpanKind::op, "causal_attention");
  if (span.active()) {
    const OpCost c = causal_attention_cost(a);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(
        core::concat("[", a.B, ", ", a.Tq, " of ", a.past + a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D, "] f32"));
  }
#if TACH_HAS_CUDA
  if (on_cuda("causal_attention", a.device, DType::f32)) {
    causal_attention_forward_cuda(a.device.index, out, q, k, v, key_mask, a);
    return;
  }
#else
  on_cuda("causal_attention", a.device, DType::f32);
#endif
  causal_attention_forward_cpu(out, nullptr, q, k, v, key_mask, a);
}

void causal_attention_forward_train(float* out, float* probs, const float* q, const float* k, const float* v,
                                    const int32_t* key_mask, const CausalAttentionArgs& a) {
  check_args(a, true);
  core::Span span(core::SpanKind::op, "causal_attention");
  if (span.active()) {
    const OpCost c = causal_attention_cost(a);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D, "] f32",
                                 probs ? " saves probs" : ""));
  }
  causal_attention_forward_cpu(out, probs, q, k, v, key_mask, a);
}

void causal_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* probs, const float* q,
                               const float* k, const float* v, const int32_t* key_mask, const CausalAttentionArgs& a) {
  check_args(a, true);
  core::Span span(core::SpanKind::op, "causal_attention_backward");
  if (span.active()) {
    const OpCost c = causal_attention_backward_cost(a);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D, "] f32",
                                 probs ? "" : " recomputes probs"));
  }
  causal_attention_backward_cpu(dq, dk, dv, dout, probs, q, k, v, key_mask, a);
}

}  // namespace tach::ops
