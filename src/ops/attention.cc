#include "ops/attention.h"

#include <atomic>

#include "ops/dispatch.h"
#include "ops/train_attention_kernel.h"
#include "ops/train_checks.h"
#if TACH_HAS_CUDA
#include "ops/attention_cudnn.h"
#endif

namespace tach::ops {

namespace {
std::atomic<int> g_cuda_attention_kernel{0};
}  // namespace

void set_cuda_attention_kernel(CudaAttentionKernel kernel) { g_cuda_attention_kernel = int(kernel); }
CudaAttentionKernel cuda_attention_kernel() { return CudaAttentionKernel(g_cuda_attention_kernel.load()); }

OpCost attention_cost(int64_t B, int64_t T, int64_t H, int64_t D, int64_t Tq, bool biased, DType dtype) {
  if (Tq < 0) Tq = T;
  OpCost c;
  // Two GEMMs of 2*Tq*T*D per head, plus scale, mask and softmax (~5 flops per score), and the bias.
  const double per_score = biased ? 6.0 : 5.0;
  const double element = double(dtype_bytes(dtype, 1));  // q, k, v and out; the mask is i32
  c.flops = double(B * H) * (4.0 * double(Tq) * double(T) * double(D) + per_score * double(Tq) * double(T));
  c.bytes_read = double(B * H * D) * element * double(Tq + 2 * T) + double(B * T) * 4;
  c.bytes_written = double(B * Tq * H * D) * element;
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

// kernel: what ran, as the op table names it ("f32" on the CPU, "cudnn fused (bf16)", "tach tiles bf16").
void describe_attention_span(core::Span& span, int64_t B, int64_t T, int64_t Tq, int64_t heads, int64_t C, bool biased,
                             const std::string& kernel, DType dtype) {
  const OpCost c = attention_cost(B, T, heads, C / heads, Tq, biased, dtype);
  span.set_cost(c.flops, c.bytes());
  span.set_detail(Tq == T ? core::concat("[", B, ", ", T, ", ", heads, "x", C / heads, "] ", kernel)
                          : core::concat("[", B, ", ", Tq, " of ", T, ", ", heads, "x", C / heads, "] ", kernel));
}

#if TACH_HAS_CUDA
// The first Tq query rows of each sequence of q [B, T, C] (row stride ld) against k, v into out
// [B, Tq, C], all in q's dtype A, on the GPU: cuDNN's fused attention where the choice takes it and
// cuDNN runs the shape (every row, into a scratch when fewer are asked for), tach's kernel
// otherwise (the rows asked for). Notes what ran for the run and returns it in the op table's
// words; *rows: the query rows computed.
std::string cuda_attention(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const int32_t* mask,
                           int64_t H, float scale, const ScoreBias& bias, const InferAttentionFacts& facts,
                           int64_t* rows) {
  const DType A = q.dtype();
  const int64_t B = k.size(0), T = k.size(1), C = k.size(2), Tq = q.size(1), D = C / H, ld = q.strides()[1];
  InferAttentionCase c = infer_attention_case(q.device(), A == DType::f32 ? facts.compute : A);
  c.activations = A;
  c.heads = c.kv_heads = H, c.head_size = D, c.queries = c.keys = T;
  c.score_bias = bias.table != nullptr;
  c.padding = mask ? facts.padding : KeyPadding::none;
  // cuDNN reads q, k, v as they are and writes out (a fresh scratch when Tq < T) in A = bf16 or f16.
  c.aligned = A == DType::f32 || cudnn_can_read({q.raw(), k.raw(), v.raw(), Tq == T ? out.raw() : nullptr}, {ld, C});
  const InferAttentionChoice choice = choose_infer_attention(c);
  std::string refused;
  if (choice.cudnn()) {
    const Tensor all = Tq == T ? out : Tensor::empty({B, T, C}, A, q.device(), MemoryCategory::activations);
    CudnnAttention a;
    a.device = q.device().index;
    a.B = B, a.T = T, a.H = a.KVH = H, a.D = D;
    a.q = q.raw(), a.k = k.raw(), a.v = v.raw(), a.activations = A;
    a.ld_q = a.ld_kv = ld, a.ld_out = C;
    a.key_mask = c.padding == KeyPadding::right ? mask : nullptr;
    a.scale = scale, a.dtype = choice.dtype;
    a.bias_bucket = bias.bucket, a.bias_table = bias.table;  // MPNet's, looked up for cuDNN
    InferAttentionShape shape{a.device, B, T, H, H, D, false, choice.dtype, A};
    shape.score_bias = bias.table != nullptr;
    if (run_cudnn_infer_attention(shape, [&] { cudnn_attention_inference(a, all.raw()); })) {
      if (Tq < T) copy_first_rows_cuda(a.device, A, out.raw(), all.raw(), B, Tq, T, C);
      note_infer_attention(cudnn_attention_words(choice.dtype));
      *rows = T;
      return cudnn_attention_words(choice.dtype);
    }
    refused = "cuDNN refused " + shape.describe() + " at run time";
  }
  const std::string words =
      tach_attention_words(attention_forward_cuda(q.device().index, A, out.raw(), q.raw(), k.raw(), v.raw(), mask, B, T,
                                                  H, D, ld, C, scale, bias, Tq),
                           A);
  note_infer_attention(words + " (" + (refused.empty() ? choice.why : refused) + ")");
  *rows = Tq;
  return words;
}
#endif

}  // namespace

void attention_forward(Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                       int heads, float scale, const Tensor& bias_table, const Tensor& bias_buckets,
                       [[maybe_unused]] const InferAttentionFacts& facts) {
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
  const DType A = q.dtype();
  check(A == DType::f32 || A == DType::bf16 || A == DType::f16,
        "attention: q, k, v and out must be f32, bf16 or f16 activations, got " + q.describe());
  check(k.dtype() == A && v.dtype() == A && out.dtype() == A,
        "attention: q, k, v and out must share one activation dtype; q is " + std::string(dtype_name(A)) + ", k " +
            std::string(dtype_name(k.dtype())) + ", v " + std::string(dtype_name(v.dtype())) + ", out " +
            std::string(dtype_name(out.dtype())));
  check(out.is_contiguous() && out.shape() == q.shape(), "attention: out must be a contiguous " +
                                                             std::string(dtype_name(A)) + " " + shape_str(q.shape()) +
                                                             ", got " + out.describe());
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
  [[maybe_unused]] const bool cuda = on_cuda("attention", q.device(), A);
  // The CPU's kernel is f32 only (the activation contract).
  if (!cuda && A != DType::f32) unsupported("attention", q.device(), A);
  core::Span span(core::SpanKind::op, "attention");
  const int32_t* mask = key_mask.defined() ? key_mask.data<int32_t>() : nullptr;
#if TACH_HAS_CUDA
  if (cuda) {
    int64_t rows = Tq;
    const std::string kernel = cuda_attention(out, q, k, v, mask, heads, scale, bias, facts, &rows);
    if (span.active()) describe_attention_span(span, B, T, rows, heads, C, bias.table != nullptr, kernel, A);
    return;
  }
#endif
  if (span.active()) describe_attention_span(span, B, T, Tq, heads, C, bias.table != nullptr, "f32", A);
  attention_forward_cpu(out.data<float>(), q.data<float>(), k.data<float>(), v.data<float>(), mask, B, T, heads,
                        C / heads, q.strides()[1], C, scale, bias, Tq);
}

}  // namespace tach::ops

namespace tach::ops {

namespace {

// The shapes and layouts the training kernels read (see attention.h); B, T, Tq, C out.
struct TrainShape {
  int64_t B = 0, T = 0, Tq = 0, C = 0, ld_in = 0, ld_out = 0;
  bool cuda = false;   // the tensors are on a CUDA device
  bool cudnn = false;  // probs is cuDNN's log-sum-exp [B, H, T]: its fused attention runs
};

// A [B, rows, C] f32 view with unit column stride, row stride ld and batch stride T·ld.
void check_rows_view(const char* op, const char* name, const Tensor& t, int64_t B, int64_t rows, int64_t T, int64_t C,
                     int64_t ld) {
  if (!t.defined() || t.dtype() != DType::f32 || t.dim() != 3 || t.shape()[0] != B || t.shape()[1] != rows ||
      t.shape()[2] != C || t.strides()[2] != 1 || t.strides()[1] != ld || (B > 1 && t.strides()[0] != T * ld))
    bad_tensor(op, name, t,
               "an f32 [" + std::to_string(B) + ", " + std::to_string(rows) + ", " + std::to_string(C) +
                   "] view with row stride " + std::to_string(ld) + " and batch stride " + std::to_string(T * ld));
}

TrainShape check_train_attention(const char* op, const Tensor& out, const Tensor& probs, const Tensor& q,
                                 const Tensor& k, const Tensor& v, const Tensor& key_mask, int heads,
                                 const Tensor& bias_table, const Tensor& bias_buckets, ScoreBias& bias) {
  if (k.dim() != 3 || q.dim() != 3 || out.dim() != 3) bad_tensor(op, "k", k, "[B, T, C] (as q, v and out)");
  TrainShape s;
  s.B = k.shape()[0], s.T = k.shape()[1], s.C = k.shape()[2], s.Tq = q.shape()[1];
  s.ld_in = k.strides()[1], s.ld_out = out.strides()[1];
  if (heads <= 0 || s.C % heads != 0)
    throw Error(std::string(op) + ": " + std::to_string(s.C) + " channels do not split into " + std::to_string(heads) +
                " heads");
  if (s.Tq < 1 || s.Tq > s.T) bad_tensor(op, "q", q, "[B, Tq, C] with 1 <= Tq <= T = " + std::to_string(s.T));
  check_rows_view(op, "q", q, s.B, s.Tq, s.T, s.C, s.ld_in);
  check_rows_view(op, "k", k, s.B, s.T, s.T, s.C, s.ld_in);
  check_rows_view(op, "v", v, s.B, s.T, s.T, s.C, s.ld_in);
  check_rows_view(op, "out", out, s.B, s.Tq, s.T, s.C, s.ld_out);
  s.cudnn = probs.defined() && probs.dim() == 3;
  if (s.cudnn) {
    if (probs.dtype() != DType::f32 || probs.shape() != Shape{s.B, heads, s.T} || !dense(probs))
      bad_tensor(op, "probs", probs, "cuDNN's log-sum-exp, a contiguous f32 " + shape_str({s.B, heads, s.T}));
    if (s.Tq != s.T || bias_table.defined())
      throw Error(std::string(op) + ": cuDNN's fused attention (probs " + shape_str({s.B, heads, s.T}) +
                  ") answers every query row without a score bias; this call has " + std::to_string(s.Tq) + " of " +
                  std::to_string(s.T) + " rows" + (bias_table.defined() ? " and a score bias" : ""));
  } else if (probs.defined()) {
    expect_f32(op, "probs", probs, s.B * heads * s.T * s.T);
  }
  if (!key_mask.defined() || key_mask.dtype() != DType::i32 || key_mask.numel() != s.B * s.T || !dense(key_mask))
    bad_tensor(op, "key_mask", key_mask, "a contiguous i32 [" + std::to_string(s.B) + ", " + std::to_string(s.T) + "]");
  if (bias_table.defined() != bias_buckets.defined())
    throw Error(std::string(op) + ": the score bias needs both its table and its buckets");
  if (bias_table.defined()) {
    if (bias_table.dim() != 2 || bias_table.shape()[1] != heads)
      bad_tensor(op, "bias_table", bias_table, "an f32 [buckets, " + std::to_string(heads) + "]");
    expect_matrix(op, "bias_table", bias_table, bias_table.shape()[0], heads);
    if (bias_buckets.dtype() != DType::i32 || bias_buckets.numel() != s.T * s.T || !dense(bias_buckets))
      bad_tensor(op, "bias_buckets", bias_buckets,
                 "a contiguous i32 [" + std::to_string(s.T) + ", " + std::to_string(s.T) + "]");
    bias = {bias_buckets.data<int32_t>(), bias_table.data<float>(), bias_table.shape()[0]};
  }
  check_device(op, q.device(), {&k, &v, &out, &probs, &key_mask, &bias_table, &bias_buckets});
  s.cuda = on_cuda(op, q.device(), DType::f32);
  if (s.cudnn && !s.cuda)
    throw Error(std::string(op) + ": cuDNN's fused attention (probs " + probs.describe() +
                ") runs on CUDA devices only");
  return s;
}

#if TACH_HAS_CUDA
CudnnAttention cudnn_call(const TrainShape& s, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& key_mask, int heads, float scale, float dropout_p, uint64_t dropout_key) {
  CudnnAttention c;
  c.device = q.device().index;
  c.B = s.B, c.T = s.T, c.H = c.KVH = heads, c.D = s.C / heads;
  c.q = q.data<float>(), c.k = k.data<float>(), c.v = v.data<float>();
  c.ld_q = c.ld_kv = s.ld_in, c.ld_out = s.ld_out;
  c.key_mask = key_mask.data<int32_t>();
  c.scale = scale, c.dropout_p = dropout_p, c.dropout_key = dropout_key;
  return c;
}

CudnnAttentionShape cudnn_shape(const TrainShape& s, const Tensor& q, int heads) {
  CudnnAttentionShape c;
  c.device = q.device().index;
  c.B = s.B, c.T = s.T, c.H = c.KVH = heads, c.D = s.C / heads;
  return c;
}

constexpr const char* kCudnnRefusedDetail = "f32 recomputes probs (cuDNN refused this shape)";
#endif

// What tach's kernels save in probs: the probabilities [B, H, T, T], or nothing (null: the backward
// recomputes them) under --exec fused and where cuDNN refused the shape at run time (probs is then
// its log-sum-exp's buffer).
float* tach_probs(const TrainShape& s, const Tensor& probs) {
  return s.cudnn || !probs.defined() ? nullptr : probs.data<float>();
}

}  // namespace

void attention_forward_train(const Tensor& out, const Tensor& probs, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& key_mask, int heads, float scale, float dropout_p, uint64_t dropout_key,
                             const Tensor& bias_table, const Tensor& bias_buckets) {
  ScoreBias bias;
  const TrainShape s =
      check_train_attention("attention", out, probs, q, k, v, key_mask, heads, bias_table, bias_buckets, bias);
  const int64_t H = heads, D = s.C / H, Tq = s.Tq == s.T ? -1 : s.Tq;
  core::Span span(core::SpanKind::op, "attention");
  if (span.active()) {
    const OpCost c = attention_cost(s.B, s.T, H, D, Tq, bias.table != nullptr);
    span.set_cost(c.flops, c.bytes());
    if (s.cudnn) span.set_detail("cudnn fused attention, bf16");
  }
#if TACH_HAS_CUDA
  if (s.cudnn) {
    if (run_cudnn_attention(cudnn_shape(s, q, heads), "forward", [&] {
          cudnn_attention_forward(cudnn_call(s, q, k, v, key_mask, heads, scale, dropout_p, dropout_key),
                                  out.data<float>(), probs.data<float>());
        }))
      return;
    if (span.active()) span.set_detail(kCudnnRefusedDetail);
  }
  if (s.cuda) {
    attention_forward_train_cuda(q.device().index, out.data<float>(), tach_probs(s, probs), q.data<float>(),
                                 k.data<float>(), v.data<float>(), key_mask.data<int32_t>(), s.B, s.T, H, D, s.ld_in,
                                 s.ld_out, scale, dropout_p, dropout_key, Tq, bias);
    return;
  }
#endif
  attention_forward_train_cpu(out.data<float>(), tach_probs(s, probs), q.data<float>(), k.data<float>(),
                              v.data<float>(), key_mask.data<int32_t>(), s.B, s.T, H, D, s.ld_in, s.ld_out, scale,
                              dropout_p, dropout_key, Tq, bias);
}

void attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& d_bias_table,
                        const Tensor& d_bias_parts, const Tensor& dout, const Tensor& probs, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& key_mask, int heads, float scale,
                        float dropout_p, uint64_t dropout_key, const Tensor& bias_table, const Tensor& bias_buckets,
                        const Tensor& out) {
  const char* op = "attention_backward";
  ScoreBias bias;
  const TrainShape s = check_train_attention(op, dout, probs, q, k, v, key_mask, heads, bias_table, bias_buckets, bias);
  check_rows_view(op, "dq", dq, s.B, s.Tq, s.T, s.C, s.ld_in);
  check_rows_view(op, "dk", dk, s.B, s.T, s.T, s.C, s.ld_in);
  check_rows_view(op, "dv", dv, s.B, s.T, s.T, s.C, s.ld_in);
  const int64_t H = heads, D = s.C / H, Tq = s.Tq == s.T ? -1 : s.Tq;
  if (d_bias_table.defined()) {
    if (!bias.table) throw Error(std::string(op) + ": a bias gradient without a score bias");
    expect_matrix(op, "d_bias_table", d_bias_table, bias.buckets, H);
    expect_f32(op, "d_bias_parts", d_bias_parts, s.B * H * bias.buckets);
  }
  if (s.cudnn)
    check_rows_view(op, "out (cuDNN's backward reads the forward's output)", out, s.B, s.T, s.T, s.C, s.ld_out);
  check_device(op, q.device(), {&dq, &dk, &dv, &d_bias_table, &d_bias_parts, &out});
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    const OpCost c = attention_backward_cost(s.B, s.T, H, D, Tq);
    span.set_cost(c.flops, c.bytes());
    if (s.cudnn) span.set_detail("cudnn fused attention, bf16");
  }
  float* parts = d_bias_table.defined() ? d_bias_parts.data<float>() : nullptr;
#if TACH_HAS_CUDA
  if (s.cudnn) {
    if (run_cudnn_attention(cudnn_shape(s, q, heads), "backward", [&] {
          cudnn_attention_backward(cudnn_call(s, q, k, v, key_mask, heads, scale, dropout_p, dropout_key),
                                   dq.data<float>(), dk.data<float>(), dv.data<float>(), dout.data<float>(),
                                   out.data<float>(), probs.data<float>());
        }))
      return;
    if (span.active()) span.set_detail(kCudnnRefusedDetail);
  }
  if (s.cuda) {
    attention_backward_cuda(q.device().index, dq.data<float>(), dk.data<float>(), dv.data<float>(),
                            parts ? d_bias_table.data<float>() : nullptr, parts, dout.data<float>(),
                            tach_probs(s, probs), q.data<float>(), k.data<float>(), v.data<float>(),
                            key_mask.data<int32_t>(), s.B, s.T, H, D, s.ld_in, s.ld_out, scale, dropout_p, dropout_key,
                            Tq, bias);
    return;
  }
#endif
  attention_backward_cpu(dq.data<float>(), dk.data<float>(), dv.data<float>(), dout.data<float>(), tach_probs(s, probs),
                         q.data<float>(), k.data<float>(), v.data<float>(), key_mask.data<int32_t>(), s.B, s.T, H, D,
                         s.ld_in, s.ld_out, scale, dropout_p, dropout_key, Tq, bias, parts);
  if (!parts) return;
  // The table's gradient [buckets, H] gets each sequence's share in batch order, so the sum does
  // not depend on the thread count.
  float* grad = d_bias_table.data<float>();
  const int64_t NB = bias.buckets;
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t j = 0; j < NB; ++j) grad[j * H + h] += parts[(b * H + h) * NB + j];
}

}  // namespace tach::ops
