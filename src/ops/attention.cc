#include "ops/attention.h"

#include <atomic>

#include "ops/copy_rows.h"
#include "ops/dispatch.h"

namespace tach::ops {

namespace {
std::atomic<int> g_cuda_attention_kernel{0};
}  // namespace

void set_cuda_attention_kernel(CudaAttentionKernel kernel) { g_cuda_attention_kernel = int(kernel); }
CudaAttentionKernel cuda_attention_kernel() { return CudaAttentionKernel(g_cuda_attention_kernel.load()); }

OpCost attention_cost(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Tq, bool biased) {
  if (Tq < 0) Tq = T;
  OpCost c;
  // Two GEMMs of 2*Tq*T*D per head, plus scale, mask and softmax (~5 flops per score), and the bias.
  const double per_score = biased ? 6.0 : 5.0;
  c.flops = double(B * H) * (4.0 * double(Tq) * double(T) * double(D) + per_score * double(Tq) * double(T));
  c.bytes_read = double(B * H * D) * 4 * double(Tq + 2 * T) + double(B * T) * 4;
  c.bytes_written = double(B * Tq * H * D) * 4;
  return c;
}

OpCost attention_backward_cost(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Tq) {
  if (Tq < 0) Tq = T;
  OpCost c;
  // Four GEMMs of 2*Tq*T*D per head (dV, dP, dQ, dK) and the softmax backward (~4 per score).
  c.flops = double(B * H) * (8.0 * double(Tq) * double(T) * double(D) + 4.0 * double(Tq) * double(T));
  c.bytes_read = double(B * H * D) * 4 * double(2 * Tq + 2 * T) + double(B * H * Tq * T) * 4;
  c.bytes_written = double(B * H * D) * 4 * double(Tq + 2 * T);
  return c;
}

namespace {

void describe_attention_span(core::Span& span, int64_t B, int64_t T, int64_t Tq, int64_t heads, int64_t C,
                             bool biased) {
  const OpCost c = attention_cost(B, T, heads, C / heads, Tq, biased);
  span.set_cost(c.flops, c.bytes());
  span.set_detail(Tq == T ? core::concat("[", B, ", ", T, ", ", heads, "x", C / heads, "] f32")
                          : core::concat("[", B, ", ", Tq, " of ", T, ", ", heads, "x", C / heads, "] f32"));
}

}  // namespace

void attention_forward(Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                       int heads, float scale, const Tensor& bias_table, const Tensor& bias_buckets) {
  check(q.dim() == 3 && k.dim() == 3 && v.dim() == 3, "attention: q, k, v must be [B, T, C]");
  const int64_t B = k.size(0), T = k.size(1), C = k.size(2), Tq = q.size(1);
  check(heads > 0 && C % heads == 0,
        "attention: " + std::to_string(C) + " channels do not split into " + std::to_string(heads) + " heads");
  check(v.shape() == k.shape() && q.size(0) == B && q.size(2) == C && Tq >= 1 && Tq <= T,
        "attention: q " + q.describe() + ", k " + k.describe() + ", v " + v.describe() +
            " must have one shape (q may have fewer rows: the first of each sequence)");
  check(q.strides() == k.strides() && q.strides() == v.strides() && q.strides()[2] == 1 &&
            q.strides()[0] == T * q.strides()[1],
        "attention: q, k, v must share a row layout with unit column stride");
  check(q.dtype() == DType::f32 && out.dtype() == DType::f32 && out.is_contiguous() && out.shape() == q.shape(),
        "attention: out must be a contiguous f32 " + shape_str(q.shape()) + ", got " + out.describe());
  if (key_mask.defined())
    check(key_mask.dtype() == DType::i32 && key_mask.numel() == B * T,
          "attention: key_mask must be i32 [" + std::to_string(B) + ", " + std::to_string(T) + "], got " +
              key_mask.describe());
  ScoreBias bias;
  if (bias_table.defined()) {
    check(bias_table.dim() == 2 && bias_table.size(1) == heads && bias_table.dtype() == DType::f32,
          "attention: the score bias must be an f32 [buckets, " + std::to_string(heads) + "] table, got " +
              bias_table.describe());
    check(bias_buckets.dtype() == DType::i32 && bias_buckets.numel() == T * T && bias_buckets.is_contiguous(),
          "attention: the score bias's buckets must be i32 [" + std::to_string(T) + ", " + std::to_string(T) +
              "], got " + bias_buckets.describe());
    bias = {bias_buckets.data<int32_t>(), bias_table.data<float>(), bias_table.size(0)};
  }
  check_device("attention", q.device(), {&bias_table, &bias_buckets});
  check_device("attention", q.device(), {&k, &v, &out, &key_mask});
  [[maybe_unused]] const bool cuda = on_cuda("attention", q.device(), q.dtype());
  core::Span span(core::SpanKind::op, "attention");
  const int32_t* mask = key_mask.defined() ? key_mask.data<int32_t>() : nullptr;
#if TACH_HAS_CUDA
  if (cuda) {
    // The CUDA kernel answers every query row: with fewer asked for, it writes all T into a
    // scratch and the first Tq of each sequence are copied out (the span counts what runs).
    if (span.active()) describe_attention_span(span, B, T, T, heads, C, bias.table != nullptr);
    Tensor all = Tq == T ? out : Tensor::empty({B, T, C}, DType::f32, q.device(), MemoryCategory::activations);
    attention_forward_cuda(q.device().index, all.data<float>(), q.data<float>(), k.data<float>(), v.data<float>(), mask,
                           B, T, heads, C / heads, q.strides()[1], C, scale, bias);
    if (Tq < T)
      for (int64_t b = 0; b < B; ++b)
        copy_rows(q.device(), out.data<float>() + b * Tq * C, C, all.data<float>() + b * T * C, C, Tq, C);
    return;
  }
#endif
  if (span.active()) describe_attention_span(span, B, T, Tq, heads, C, bias.table != nullptr);
  attention_forward_cpu(out.data<float>(), q.data<float>(), k.data<float>(), v.data<float>(), mask, B, T, heads,
                        C / heads, q.strides()[1], C, scale, bias, Tq);
}

}  // namespace tach::ops
