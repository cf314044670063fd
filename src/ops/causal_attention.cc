#include "ops/causal_attention.h"

#include "ops/dispatch.h"

#include "core/trace.h"
#include "tach/error.h"

namespace tach::ops {

OpCost causal_attention_cost(int64_t B, int64_t Tq, int64_t Tk, int64_t H, int64_t KVH, int64_t D) {
  OpCost c;
  // Two GEMMs of 2*Tq*Tk*D per head (the kernel computes the full rectangle and masks), and
  // ~5 flops per score for scale, mask and softmax.
  c.flops = double(B * H) * (4.0 * double(Tq) * double(Tk) * double(D) + 5.0 * double(Tq) * double(Tk));
  c.bytes_read = double(B) * (double(Tq * H * D) + 2.0 * double(Tk * KVH * D)) * 4 + double(B * Tk) * 4;
  c.bytes_written = double(B * Tq * H * D) * 4;
  return c;
}

OpCost causal_attention_backward_cost(int64_t B, int64_t T, int64_t H, int64_t KVH, int64_t D) {
  OpCost c;
  // Four GEMMs of 2*T*T*D per head (dV, dP, dQ, dK) and ~4 flops per score for the softmax's backward.
  c.flops = double(B * H) * (8.0 * double(T) * double(T) * double(D) + 4.0 * double(T) * double(T));
  c.bytes_read = double(B) * (2.0 * double(T * H * D) + 2.0 * double(T * KVH * D)) * 4 + double(B * H * T * T) * 4;
  c.bytes_written = double(B) * (double(T * H * D) + 2.0 * double(T * KVH * D)) * 4;
  return c;
}

namespace {

void check_args(const CausalAttentionArgs& a, bool training) {
  check(a.B > 0 && a.Tq > 0 && a.H > 0 && a.KVH > 0 && a.D > 0 && a.H % a.KVH == 0,
        "causal_attention: " + std::to_string(a.H) + " query heads cannot share " + std::to_string(a.KVH) +
            " key/value heads (or an extent is zero)");
  check(!training || a.past == 0, "causal_attention: training runs whole sequences, without a cache");
}

}  // namespace

void causal_attention_forward(float* out, const float* q, const float* k, const float* v, const int32_t* key_mask,
                              const CausalAttentionArgs& a) {
  check_args(a, false);
  core::Span span(core::SpanKind::op, "causal_attention");
  if (span.active()) {
    const OpCost c = causal_attention_cost(a.B, a.Tq, a.past + a.Tq, a.H, a.KVH, a.D);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.Tq, " of ", a.past + a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D,
                                 "] f32"));
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
    const OpCost c = causal_attention_cost(a.B, a.Tq, a.Tq, a.H, a.KVH, a.D);
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
    const OpCost c = causal_attention_backward_cost(a.B, a.Tq, a.H, a.KVH, a.D);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D, "] f32",
                                 probs ? "" : " recomputes probs"));
  }
  causal_attention_backward_cpu(dq, dk, dv, dout, probs, q, k, v, key_mask, a);
}

}  // namespace tach::ops
