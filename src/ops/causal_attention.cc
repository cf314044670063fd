#include "ops/causal_attention.h"

#include "ops/dispatch.h"

#include <algorithm>

#include "core/trace.h"
#include "ops/train_attention_kernel.h"
#include "tach/error.h"
#if TACH_HAS_CUDA
#include "ops/attention_cudnn.h"
#endif

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
  const double element = double(dtype_bytes(a.dtype, 1));  // q, k, v and out; the mask is i32
  c.flops = double(a.B * a.H) * scores * (4.0 * double(a.D) + 5.0);
  c.bytes_read =
      double(a.B) * (double(a.Tq * a.H * a.D) + 2.0 * Tk * double(a.KVH * a.D)) * element + double(a.B) * Tk * 4;
  c.bytes_written = double(a.B * a.Tq * a.H * a.D) * element;
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

// kernel: what ran, as the op table names it ("f32" on the CPU, "cudnn fused (bf16)", "tach rows bf16").
void describe_span(core::Span& span, const CausalAttentionArgs& a, const std::string& kernel) {
  const OpCost c = causal_attention_cost(a);
  span.set_cost(c.flops, c.bytes());
  span.set_detail(
      core::concat("[", a.B, ", ", a.Tq, " of ", a.past + a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D, "] ", kernel));
}

#if TACH_HAS_CUDA
// The call on the GPU: cuDNN's fused attention where the choice takes it (a prefill of a bf16 or
// f16 model) and cuDNN runs the shape, tach's kernel otherwise. Notes what ran for the run and
// returns it in the op table's words.
std::string cuda_causal_attention(void* out, const void* q, const void* k, const void* v, const int32_t* key_mask,
                                  const CausalAttentionArgs& a) {
  const DType A = a.dtype;
  InferAttentionCase c = infer_attention_case(a.device, A == DType::f32 ? a.facts.compute : A);
  c.activations = A;
  c.heads = a.H, c.kv_heads = a.KVH, c.head_size = a.D;
  // A captured decoding step (its cache length read on the device) decodes, whatever its rows.
  c.queries = a.device_past ? 1 : a.Tq, c.keys = a.past + a.Tq;
  c.causal = a.causal, c.window = a.window;
  c.padding = key_mask ? a.facts.padding : KeyPadding::none;
  const int64_t kv_batch = a.batch_stride_kv;
  c.aligned = A == DType::f32 || cudnn_can_read({q, k, v, out}, {a.ld_q, a.ld_kv, a.ld_out, kv_batch});
  const InferAttentionChoice choice = choose_infer_attention(c);
  std::string refused;
  if (choice.cudnn()) {
    CudnnAttention ca;
    ca.device = a.device.index;
    ca.B = a.B, ca.T = a.Tq, ca.H = a.H, ca.KVH = a.KVH, ca.D = a.D;
    ca.q = q, ca.k = k, ca.v = v, ca.activations = A;
    ca.ld_q = a.ld_q, ca.ld_kv = a.ld_kv, ca.kv_batch_stride = a.batch_stride_kv, ca.ld_out = a.ld_out;
    ca.left_padded = c.padding == KeyPadding::left;  // the choice takes it for causal rows only
    ca.key_mask = c.padding == KeyPadding::right || ca.left_padded ? key_mask : nullptr;
    ca.mask_stride = a.mask_stride;
    ca.causal = a.causal, ca.scale = a.scale, ca.dtype = choice.dtype;
    ca.window = a.window < c.keys ? a.window : 0;  // a window over every key hides none
    InferAttentionShape shape{ca.device, a.B, a.Tq, a.H, a.KVH, a.D, a.causal, choice.dtype, A};
    shape.window = ca.window, shape.left_padded = ca.left_padded;
    if (run_cudnn_infer_attention(shape, [&] { cudnn_attention_inference(ca, out); })) {
      note_infer_attention(cudnn_attention_words(choice.dtype));
      return cudnn_attention_words(choice.dtype);
    }
    refused = "cuDNN refused " + shape.describe() + " at run time";
  }
  const std::string words =
      tach_attention_words(causal_attention_forward_cuda(a.device.index, out, q, k, v, key_mask, a), A);
  note_infer_attention(words + " (" + (refused.empty() ? choice.why : refused) + ")");
  return words;
}
#endif

}  // namespace

void causal_attention_forward(void* out, const void* q, const void* k, const void* v, const int32_t* key_mask,
                              const CausalAttentionArgs& a) {
  check_args(a, false);
  check(a.dtype == DType::f32 || a.dtype == DType::bf16 || a.dtype == DType::f16,
        "causal_attention: q, k, v and out must be f32, bf16 or f16 activations, got " +
            std::string(dtype_name(a.dtype)));
  [[maybe_unused]] const bool cuda = on_cuda("causal_attention", a.device, a.dtype);
  // The CPU's kernel is f32 only (the activation contract).
  if (!cuda && a.dtype != DType::f32) unsupported("causal_attention", a.device, a.dtype);
  core::Span span(core::SpanKind::op, "causal_attention");
#if TACH_HAS_CUDA
  if (cuda) {
    const std::string kernel = cuda_causal_attention(out, q, k, v, key_mask, a);
    if (span.active()) describe_span(span, a, kernel);
    return;
  }
#endif
  if (span.active()) describe_span(span, a, "f32");
  causal_attention_forward_cpu(static_cast<float*>(out), nullptr, static_cast<const float*>(q),
                               static_cast<const float*>(k), static_cast<const float*>(v), key_mask, a);
}

void causal_attention_forward(float* out, const float* q, const float* k, const float* v, const int32_t* key_mask,
                              const CausalAttentionArgs& a) {
  check(a.dtype == DType::f32, "causal_attention: f32 pointers were given for " + std::string(dtype_name(a.dtype)) +
                                   " operands (a.dtype); pass them as void* with their dtype");
  causal_attention_forward(static_cast<void*>(out), static_cast<const void*>(q), static_cast<const void*>(k),
                           static_cast<const void*>(v), key_mask, a);
}

namespace {

// The row stride of a training operand: [N, cols] f32 with contiguous columns.
int64_t row_stride(const char* op, const char* what, const Tensor& t, int64_t N, int64_t cols) {
  check(t.defined() && t.dtype() == DType::f32 && t.dim() == 2 && t.size(0) == N && t.size(1) == cols &&
            (cols == 1 || t.strides()[1] == 1) && t.strides()[0] >= cols,
        std::string(op) + ": " + what + " must be f32 [" + std::to_string(N) + ", " + std::to_string(cols) +
            "] with contiguous columns, got " + (t.defined() ? t.describe() : std::string("nothing")));
  return t.strides()[0];
}

// probs [B, H, T]: cuDNN's log-sum-exp, saved by its fused attention (ops/train_attention_kernel.h).
bool uses_cudnn(const Tensor& probs) { return probs.defined() && probs.dim() == 3; }

// Checks the training operands against a's extents and sets a's layout from them. out_or_dout:
// the forward's out, or the backward's dout (the kernel reads one stride for both).
void training_layout(const char* op, CausalAttentionArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                     const Tensor& out_or_dout, const Tensor& probs, const Tensor& key_mask) {
  a.past = 0;
  a.dtype = DType::f32;  // training's operands are f32 (checked below)
  a.device = q.device();
  check_args(a, true);
  const int64_t N = a.B * a.Tq, T = a.Tq;
  a.ld_q = row_stride(op, "q", q, N, a.H * a.D);
  a.ld_kv = row_stride(op, "k", k, N, a.KVH * a.D);
  check(row_stride(op, "v", v, N, a.KVH * a.D) == a.ld_kv,
        std::string(op) + ": k " + k.describe() + " and v " + v.describe() + " must have one row stride");
  a.ld_out = row_stride(op, "the output (or its gradient)", out_or_dout, N, a.H * a.D);
  a.batch_stride_kv = T * a.ld_kv;
  a.mask_stride = T;
  if (uses_cudnn(probs)) {
    check(probs.dtype() == DType::f32 && probs.is_contiguous() && probs.shape() == Shape{a.B, a.H, T},
          std::string(op) + ": cuDNN's log-sum-exp must be contiguous f32 " + shape_str({a.B, a.H, T}) + ", got " +
              probs.describe());
    check(a.window == 0 || a.window >= T, std::string(op) + ": cuDNN's fused attention (probs " +
                                              shape_str({a.B, a.H, T}) + ") has no sliding window; this layer's is " +
                                              std::to_string(a.window) + " keys over " + std::to_string(T) + " tokens");
    check(a.device.kind == DeviceKind::cuda,
          std::string(op) + ": cuDNN's fused attention (probs " + shape_str({a.B, a.H, T}) + ") runs on CUDA only");
  } else if (probs.defined()) {
    check(probs.dtype() == DType::f32 && probs.is_contiguous() && probs.shape() == Shape{a.B, a.H, T, T},
          std::string(op) + ": probs must be contiguous f32 " + shape_str({a.B, a.H, T, T}) + ", got " +
              probs.describe());
  }
  if (key_mask.defined())
    check(
        key_mask.dtype() == DType::i32 && key_mask.is_contiguous() && key_mask.shape() == Shape{a.B, T},
        std::string(op) + ": key_mask must be contiguous i32 " + shape_str({a.B, T}) + ", got " + key_mask.describe());
  check_device(op, a.device, {&k, &v, &out_or_dout, &probs, &key_mask});
}

const int32_t* mask_of(const Tensor& key_mask) { return key_mask.defined() ? key_mask.data<int32_t>() : nullptr; }
float* probs_of(const Tensor& probs) { return probs.defined() ? probs.data<float>() : nullptr; }

#if TACH_HAS_CUDA
CudnnAttention cudnn_call(const CausalAttentionArgs& a, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& key_mask) {
  CudnnAttention c;
  c.device = a.device.index;
  c.B = a.B, c.T = a.Tq, c.H = a.H, c.KVH = a.KVH, c.D = a.D;
  c.q = q.data<float>(), c.k = k.data<float>(), c.v = v.data<float>();
  c.ld_q = a.ld_q, c.ld_kv = a.ld_kv, c.ld_out = a.ld_out;
  c.key_mask = mask_of(key_mask);
  c.causal = a.causal, c.scale = a.scale;
  return c;
}

CudnnAttentionShape cudnn_shape(const CausalAttentionArgs& a) {
  CudnnAttentionShape s;
  s.device = a.device.index;
  s.B = a.B, s.T = a.Tq, s.H = a.H, s.KVH = a.KVH, s.D = a.D, s.causal = a.causal;
  return s;
}

constexpr const char* kCudnnRefusedDetail = "f32 recomputes probs (cuDNN refused this shape)";
#endif

// What tach's kernels save in probs: the probabilities [B, H, T, T], or nothing (null: the backward
// recomputes them) under --exec fused and where cuDNN refused the shape at run time (probs is then
// its log-sum-exp's buffer).
float* tach_probs(const Tensor& probs) { return uses_cudnn(probs) ? nullptr : probs_of(probs); }

}  // namespace

void causal_attention_forward_train(const Tensor& out, const Tensor& probs, const Tensor& q, const Tensor& k,
                                    const Tensor& v, const Tensor& key_mask, CausalAttentionArgs a) {
  constexpr const char* kOp = "causal_attention_forward_train";
  training_layout(kOp, a, q, k, v, out, probs, key_mask);
  [[maybe_unused]] const bool cuda = on_cuda(kOp, a.device, DType::f32);
  core::Span span(core::SpanKind::op, "causal_attention");
  if (span.active()) {
    const OpCost c = causal_attention_cost(a);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D, "] ",
                                 uses_cudnn(probs) ? "cudnn fused attention, bf16"
                                 : probs.defined() ? "f32 saves probs"
                                                   : "f32"));
  }
#if TACH_HAS_CUDA
  if (uses_cudnn(probs)) {
    if (run_cudnn_attention(cudnn_shape(a), "forward", [&] {
          cudnn_attention_forward(cudnn_call(a, q, k, v, key_mask), out.data<float>(), probs.data<float>());
        }))
      return;
    if (span.active()) span.set_detail(kCudnnRefusedDetail);
  }
  if (cuda) {
    causal_attention_forward_train_cuda(a.device.index, out.data<float>(), tach_probs(probs), q.data<float>(),
                                        k.data<float>(), v.data<float>(), mask_of(key_mask), a);
    return;
  }
#endif
  causal_attention_forward_cpu(out.data<float>(), tach_probs(probs), q.data<float>(), k.data<float>(), v.data<float>(),
                               mask_of(key_mask), a);
}

void causal_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                               const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& key_mask, CausalAttentionArgs a, const Tensor& out) {
  constexpr const char* kOp = "causal_attention_backward";
  training_layout(kOp, a, q, k, v, dout, probs, key_mask);
  const int64_t N = a.B * a.Tq;
  // The kernel writes each gradient with its operand's row stride.
  check(row_stride(kOp, "dq", dq, N, a.H * a.D) == a.ld_q && row_stride(kOp, "dk", dk, N, a.KVH * a.D) == a.ld_kv &&
            row_stride(kOp, "dv", dv, N, a.KVH * a.D) == a.ld_kv,
        std::string(kOp) + ": dq, dk, dv " + dq.describe() + ", " + dk.describe() + ", " + dv.describe() +
            " must have the row strides of q and k");
  check_device(kOp, a.device, {&dq, &dk, &dv, &out});
  if (uses_cudnn(probs))
    check(out.defined() &&
              row_stride(kOp, "out (cuDNN's backward reads the forward's output)", out, N, a.H * a.D) == a.ld_out,
          std::string(kOp) + ": cuDNN's backward reads the forward's output with dout's row stride, got " +
              out.describe());
  [[maybe_unused]] const bool cuda = on_cuda(kOp, a.device, DType::f32);
  core::Span span(core::SpanKind::op, kOp);
  if (span.active()) {
    const OpCost c = causal_attention_backward_cost(a);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", a.B, ", ", a.Tq, ", ", a.H, "/", a.KVH, " heads x", a.D, "] ",
                                 uses_cudnn(probs) ? "cudnn fused attention, bf16"
                                 : probs.defined() ? "f32"
                                                   : "f32 recomputes probs"));
  }
#if TACH_HAS_CUDA
  if (uses_cudnn(probs)) {
    if (run_cudnn_attention(cudnn_shape(a), "backward", [&] {
          cudnn_attention_backward(cudnn_call(a, q, k, v, key_mask), dq.data<float>(), dk.data<float>(),
                                   dv.data<float>(), dout.data<float>(), out.data<float>(), probs.data<float>());
        }))
      return;
    if (span.active()) span.set_detail(kCudnnRefusedDetail);
  }
  if (cuda) {
    causal_attention_backward_cuda(a.device.index, dq.data<float>(), dk.data<float>(), dv.data<float>(),
                                   dout.data<float>(), tach_probs(probs), q.data<float>(), k.data<float>(),
                                   v.data<float>(), mask_of(key_mask), a);
    return;
  }
#endif
  causal_attention_backward_cpu(dq.data<float>(), dk.data<float>(), dv.data<float>(), dout.data<float>(),
                                tach_probs(probs), q.data<float>(), k.data<float>(), v.data<float>(), mask_of(key_mask),
                                a);
}

}  // namespace tach::ops
