#include "model/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/trace.h"

#include "model/activation_dtype.h"
#include "ops/attention.h"
#include "ops/cast.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "tach/error.h"

namespace tach::model {

void check_batch(const TokenBatch& batch, const EncoderShape& shape) {
  const Tensor& ids = batch.input_ids;
  check(ids.defined() && ids.dim() == 2 && ids.dtype() == DType::i32,
        "input_ids must be i32 [batch, seq], got " + (ids.defined() ? ids.describe() : std::string("nothing")));
  const int64_t B = ids.size(0), T = ids.size(1);
  check(B > 0 && T > 0, "empty batch " + ids.describe());
  check(shape.positions_needed(T) <= shape.max_positions,
        "sequence length " + std::to_string(T) + " exceeds the model's " +
            std::to_string(shape.max_positions - shape.positions_needed(0)) + " positions (max_position_embeddings " +
            std::to_string(shape.max_positions) + (shape.position_pad >= 0 ? ", starting after padding_idx)" : ")"));
  check(batch.attention_mask.defined() && batch.attention_mask.shape() == ids.shape() &&
            batch.attention_mask.dtype() == DType::i32,
        "attention_mask must be i32 " + shape_str(ids.shape()));
  const int32_t* id = ids.data<int32_t>();
  const int32_t* m = batch.attention_mask.data<int32_t>();
  for (int64_t i = 0; i < B * T; ++i) {
    check(id[i] >= 0 && id[i] < shape.vocab, "input_ids[" + std::to_string(i / T) + "][" + std::to_string(i % T) +
                                                 "] = " + std::to_string(id[i]) + " is outside the vocabulary of " +
                                                 std::to_string(shape.vocab) + " tokens");
    check(m[i] == 0 || m[i] == 1, "attention_mask[" + std::to_string(i / T) + "][" + std::to_string(i % T) +
                                      "] = " + std::to_string(m[i]) + ": expected 0 or 1");
  }
  if (batch.token_type_ids.defined()) {
    check(batch.token_type_ids.shape() == ids.shape() && batch.token_type_ids.dtype() == DType::i32,
          "token_type_ids must be i32 " + shape_str(ids.shape()));
    check(shape.type_vocab > 0, "this model has no token types (DistilBERT, MPNet): do not pass token_type_ids");
    const int32_t* tt = batch.token_type_ids.data<int32_t>();
    for (int64_t i = 0; i < B * T; ++i)
      check(tt[i] >= 0 && tt[i] < shape.type_vocab,
            "token_type_ids[" + std::to_string(i / T) + "][" + std::to_string(i % T) + "] = " + std::to_string(tt[i]) +
                " is outside the " + std::to_string(shape.type_vocab) + " token types");
  }
}

Tensor encoder_position_ids(const Tensor& ids, const EncoderShape& s) {
  const int64_t B = ids.size(0), T = ids.size(1);
  Tensor positions = Tensor::empty({B, T}, DType::i32);
  int32_t* pos = positions.data<int32_t>();
  const int32_t* id = ids.data<int32_t>();
  for (int64_t b = 0; b < B; ++b) {
    int32_t real = 0;  // RoBERTa: cumsum(ids != pad) * (ids != pad) + pad
    for (int64_t t = 0; t < T; ++t) {
      const int64_t i = b * T + t;
      if (s.position_pad < 0) pos[i] = int32_t(t);
      else pos[i] = id[i] == s.position_pad ? s.position_pad : s.position_pad + ++real;
    }
  }
  return positions;
}

void check_rows(const SequenceRows& rows, int64_t B, int64_t T) {
  check(int64_t(rows.size()) == B,
        "rows for " + std::to_string(rows.size()) + " sequences in a batch of " + std::to_string(B));
  for (size_t b = 0; b < rows.size(); ++b)
    for (const int64_t r : rows[b])
      check(r >= 0 && r < T, "row " + std::to_string(r) + " of sequence " + std::to_string(b) + " is outside its " +
                                 std::to_string(T) + " tokens");
}

int64_t rows_in_all(const SequenceRows& rows) {
  int64_t n = 0;
  for (const auto& r : rows) n += int64_t(r.size());
  return n;
}

namespace {

// Layer `li`, whose queries are R of the N = B*T tokens (all of them, or the rows read). R < N
// is costed as the CPU runs it: each row one query against its sequence's T keys.
ops::OpCost layer_cost(const EncoderShape& s, size_t li, int64_t B, int64_t T, int64_t R) {
  const int64_t N = B * T, C = s.hidden, I = s.intermediate;
  const int64_t H = s.heads_in(li), D = s.head_dim(), A = H * D;
  const bool biased = s.relative_buckets > 0;
  const DType w = s.compute, act = s.activations;
  ops::OpCost c = ops::linear_cost(N, 3 * A, C, w, true, act);
  c += R == N ? ops::attention_cost(B, T, H, D, T, biased, act) : ops::attention_cost(R, T, H, D, 1, biased, act);
  if (R < N) c += ops::copy_rows_cost(R, C, act);  // the residual's rows
  c += ops::linear_cost(R, C, A, w, true, act);
  c += ops::layer_norm_cost(R, C, true, act);
  c += ops::linear_cost(R, I, C, w, true, act);
  c += ops::linear_cost(R, C, I, w, true, act);
  c += ops::layer_norm_cost(R, C, true, act);
  return c;
}

}  // namespace

ops::OpCost encoder_rows_cost(const EncoderShape& s, int64_t B, int64_t T, int64_t R) {
  const int64_t N = B * T, C = s.hidden;
  ops::OpCost c = ops::embedding_cost(N, C, s.embeddings, s.activations);
  c += ops::embedding_cost(N, C, s.embeddings, s.activations);
  if (s.type_vocab > 0) c += ops::embedding_cost(N, C, s.embeddings, s.activations);
  c += ops::layer_norm_cost(N, C, false, s.activations);
  for (int64_t i = 0; i < s.layers; ++i) c += layer_cost(s, size_t(i), B, T, i + 1 == s.layers ? R : N);
  if (s.activations != DType::f32) c += ops::cast_cost(R * C, s.activations, DType::f32);  // the output, to f32
  return c;
}

ops::OpCost encoder_cost(const EncoderShape& s, int64_t B, int64_t T, EncoderOutput output) {
  return encoder_rows_cost(s, B, T, output == EncoderOutput::first_token ? B : B * T);
}

namespace {

// The first n elements of a contiguous buffer as a tensor of `shape` (a layer with pruned heads
// uses less of the buffers sized for C).
Tensor leading(const Tensor& buffer, const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return buffer.reshape({buffer.numel()}).narrow(0, 0, n).reshape(shape);
}

// m when every sequence reads its first m rows in order (a classifier's first token: m = 1), else 0.
int64_t leading_rows(const SequenceRows& rows) {
  const size_t m = rows.front().size();
  for (const auto& r : rows) {
    if (r.size() != m) return 0;
    for (size_t i = 0; i < m; ++i)
      if (r[i] != int64_t(i)) return 0;
  }
  return int64_t(m);
}

// The attention of the last layer for the rows read: ctx [R, A] from q|k|v [B, T, 3A].
// The first m rows of every sequence: one call for the batch (the kernel's Tq). Other rows on the
// CPU: a call per row, its query against its sequence's keys (B = 1, Tq = 1); MPNet's bucket row
// for a query at p is handed over as row 0 of a [T, T] view starting at row p of `wide_buckets`
// ([2T - 1, T]: the [T, T] table, then rows the kernel never reads at Tq = 1). On CUDA the kernel
// answers all T queries whatever Tq is (reading T query rows from the one given), so there every
// query runs once and the rows are gathered.
void rows_attention(Tensor& ctx, const Tensor& qkv3, const SequenceRows& rows, int64_t first_m, int64_t H, float scale,
                    const Tensor& attention_mask, const Tensor& relative_bias, const Tensor& buckets,
                    const Tensor& row_index, const ops::InferAttentionFacts& facts) {
  const int64_t B = qkv3.size(0), T = qkv3.size(1), A = qkv3.size(2) / 3;
  const Device device = qkv3.device();
  const Tensor k = qkv3.narrow(2, A, A), v = qkv3.narrow(2, 2 * A, A);
  if (first_m > 0) {
    Tensor out = ctx.reshape({B, first_m, A});
    ops::attention_forward(out, qkv3.narrow(1, 0, first_m).narrow(2, 0, A), k, v, attention_mask, int(H), scale,
                           relative_bias, buckets, facts);
    return;
  }
  if (device.kind != DeviceKind::cpu) {
    Tensor all = Tensor::empty({B, T, A}, qkv3.dtype(), device);
    ops::attention_forward(all, qkv3.narrow(2, 0, A), k, v, attention_mask, int(H), scale, relative_bias, buckets,
                           facts);
    ops::gather_rows(ctx, all.reshape({B * T, A}), row_index);
    return;
  }
  Tensor wide_buckets;
  if (relative_bias.defined()) {
    wide_buckets = Tensor::zeros({2 * T - 1, T}, DType::i32);
    std::copy_n(buckets.data<int32_t>(), T * T, wide_buckets.data<int32_t>());
  }
  int64_t r = 0;
  for (int64_t b = 0; b < B; ++b) {
    const Tensor seq = qkv3.narrow(0, b, 1);  // [1, T, 3A]
    for (const int64_t p : rows[size_t(b)]) {
      Tensor out = ctx.narrow(0, r++, 1).reshape({1, 1, A});
      ops::attention_forward(out, seq.narrow(1, p, 1).narrow(2, 0, A), seq.narrow(2, A, A), seq.narrow(2, 2 * A, A),
                             attention_mask.narrow(0, b, 1), int(H), scale, relative_bias,
                             relative_bias.defined() ? wide_buckets.narrow(0, p, T) : Tensor());
    }
  }
}

// The last layer (li) for the rows read: keys and values for every token of h [B, T, C] (qkv
// [N, 3C] is the layers' buffer, [N, 3A] of it used), everything after them for the R rows.
// Returns [R, C] in h's dtype (the activations').
Tensor last_layer_rows(const EncoderLayer& layer, size_t li, const EncoderShape& s, const Tensor& h,
                       const Tensor& qkv_buffer, const Tensor& attention_mask, const Tensor& relative_bias,
                       const Tensor& buckets, float scale, const SequenceRows& rows, ops::KeyPadding padding) {
  const int64_t B = h.size(0), T = h.size(1), C = s.hidden, I = s.intermediate, R = rows_in_all(rows);
  const int64_t H = s.heads_in(li), A = H * s.head_dim();
  const Device device = h.device();
  const DType act = h.dtype();
  const int64_t first_m = leading_rows(rows);
  // row_index [R] i32: each row's index among the N tokens (on the device, for the gathers).
  Tensor row_index;
  if (first_m == 0) {
    Tensor host = Tensor::empty({R}, DType::i32);
    int32_t* at = host.data<int32_t>();
    for (int64_t b = 0; b < B; ++b)
      for (const int64_t p : rows[size_t(b)]) *at++ = int32_t(b * T + p);
    row_index = host.on(device);
  }
  std::optional<core::Span> attn_span(std::in_place, core::SpanKind::module, "attention");
  Tensor qkv = leading(qkv_buffer, {B * T, 3 * A});
  ops::linear_forward(qkv, h.reshape({B * T, C}), *layer.qkv);
  Tensor ctx = Tensor::empty({R, A}, act, device);
  rows_attention(ctx, qkv.reshape({B, T, 3 * A}), rows, first_m, H, scale, attention_mask, relative_bias, buckets,
                 row_index, {layer.qkv->compute_dtype(), padding});
  // x [R, C]: the residual stream at the rows.
  Tensor x = Tensor::empty({R, C}, act, device);
  if (first_m > 0) ops::copy_rows(x.reshape({B, first_m * C}), h.reshape({B, T * C}).narrow(1, 0, first_m * C));
  else ops::gather_rows(x, h.reshape({B * T, C}), row_index);
  Tensor proj = Tensor::empty({R, C}, act, device);
  ops::linear_forward(proj, ctx, *layer.attn_out);
  ops::layer_norm_forward(x, proj, x, layer.ln1_gamma, layer.ln1_beta, s.eps);
  attn_span.reset();
  core::Span ffn_span(core::SpanKind::module, "ffn");
  Tensor ffn = Tensor::empty({R, I}, act, device);
  ops::linear_forward(ffn, x, *layer.ffn_in);
  ops::linear_forward(proj, ffn, *layer.ffn_out);
  ops::layer_norm_forward(x, proj, x, layer.ln2_gamma, layer.ln2_beta, s.eps);
  return x;
}

}  // namespace

namespace {

// Every layer over every token ([B, T, C]), or the last for `rows` alone ([R, C]; null: every
// token), in w.activations. The batch comes checked.
Tensor forward(const EncoderWeights& w, const EncoderShape& s, const TokenBatch& batch, const SequenceRows* rows,
               ops::OpCost* cost) {
  const int64_t B = batch.batch(), T = batch.seq_len(), C = s.hidden, I = s.intermediate, N = B * T;
  // The model's device is where its weights are; a GPU model gets a copy of the (checked) batch.
  const Device device = w.emb_ln_gamma.device();
  const Tensor input_ids = batch.input_ids.on(device);
  const Tensor attention_mask = batch.attention_mask.on(device);

  // Module spans name where each op sits (the profiler's module paths): transformers' module
  // names, with the fused q|k|v projection as "attention.qkv".
  core::Span model_span(core::SpanKind::module, s.module);
  std::optional<core::Span> emb_span(std::in_place, core::SpanKind::module, "embeddings");
  // The residual stream and the layers' buffers are in the activations' dtype (bf16 or f16 on a
  // GPU for a bf16 or f16 model: no conversion before a GEMM or around attention).
  const DType act = w.activations;
  // Embeddings: word + position (+ token type), then LayerNorm.
  Tensor h = Tensor::empty({B, T, C}, act, device);
  ops::embedding_forward(h, input_ids, w.word_embeddings, false);
  ops::embedding_forward(h, encoder_position_ids(batch.input_ids, s).on(device), w.position_embeddings, true);
  if (w.token_type_embeddings.defined()) {
    Tensor types =
        batch.token_type_ids.defined() ? batch.token_type_ids.on(device) : Tensor::zeros({B, T}, DType::i32, device);
    ops::embedding_forward(h, types, w.token_type_embeddings, true);
  }
  ops::layer_norm_forward(h, h, Tensor(), w.emb_ln_gamma, w.emb_ln_beta, s.eps);
  emb_span.reset();

  // Buffers reused by every layer.
  Tensor qkv = Tensor::empty({N, 3 * C}, act, device);
  Tensor ctx = Tensor::empty({B, T, C}, act, device);
  Tensor proj = Tensor::empty({N, C}, act, device);
  Tensor ffn = Tensor::empty({N, I}, act, device);
  Tensor h2 = h.reshape({N, C});
  // MPNet: the relative position buckets, computed once for every layer.
  Tensor buckets;
  if (w.relative_bias.defined()) {
    const std::vector<int32_t> b = ops::relative_position_buckets(T, s.relative_buckets, s.relative_max_distance);
    buckets = Tensor::empty({T, T}, DType::i32);
    std::copy(b.begin(), b.end(), buckets.data<int32_t>());
    buckets = buckets.on(device);
  }
  const int64_t head_dim = s.head_dim();
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  // Where the batch's padding sits, seen on the host (the GPU's attention takes cuDNN's fused
  // kernel for right padding only).
  const Tensor& host_mask = batch.attention_mask;
  const ops::KeyPadding padding = host_mask.device().kind == DeviceKind::cpu && host_mask.is_contiguous()
                                      ? ops::key_padding_of(host_mask.data<int32_t>(), B, T, T)
                                      : ops::KeyPadding::unknown;
  for (size_t li = 0; li < w.layers.size(); ++li) {
    const EncoderLayer& layer = w.layers[li];
    core::Span layer_span(core::SpanKind::module, core::tracing() ? core::concat(s.layer_prefix, li) : std::string());
    if (rows != nullptr && li + 1 == w.layers.size()) {
      Tensor out =
          last_layer_rows(layer, li, s, h, qkv, attention_mask, w.relative_bias, buckets, scale, *rows, padding);
      if (cost) *cost += encoder_rows_cost(s, B, T, rows_in_all(*rows));
      return out;
    }
    std::optional<core::Span> attn_span(std::in_place, core::SpanKind::module, "attention");
    const int64_t H = s.heads_in(li), A = H * head_dim;  // A = C unless heads were pruned
    Tensor layer_qkv = A == C ? qkv : leading(qkv, {N, 3 * A});
    Tensor layer_ctx = A == C ? ctx : leading(ctx, {B, T, A});
    ops::linear_forward(layer_qkv, h2, *layer.qkv);
    // q, k, v are column blocks of one [B, T, 3A] buffer: views, no copies.
    Tensor qkv3 = layer_qkv.reshape({B, T, 3 * A});
    ops::attention_forward(layer_ctx, qkv3.narrow(2, 0, A), qkv3.narrow(2, A, A), qkv3.narrow(2, 2 * A, A),
                           attention_mask, static_cast<int>(H), scale, w.relative_bias, buckets,
                           {layer.qkv->compute_dtype(), padding});
    ops::linear_forward(proj, layer_ctx.reshape({N, A}), *layer.attn_out);
    ops::layer_norm_forward(h2, proj, h2, layer.ln1_gamma, layer.ln1_beta, s.eps);
    attn_span.reset();
    core::Span ffn_span(core::SpanKind::module, "ffn");
    ops::linear_forward(ffn, h2, *layer.ffn_in);
    ops::linear_forward(proj, ffn, *layer.ffn_out);
    ops::layer_norm_forward(h2, proj, h2, layer.ln2_gamma, layer.ln2_beta, s.eps);
  }
  if (cost) *cost += encoder_rows_cost(s, B, T, rows ? rows_in_all(*rows) : N);
  if (rows != nullptr) {  // no layers: the embeddings' rows
    Tensor out = Tensor::empty({rows_in_all(*rows), C}, act, device);
    int64_t r = 0;
    for (int64_t b = 0; b < B; ++b)
      for (const int64_t p : (*rows)[size_t(b)]) ops::copy_rows(out.narrow(0, r++, 1), h2.narrow(0, b * T + p, 1));
    return out;
  }
  return h;
}

}  // namespace

Tensor encoder_forward(const EncoderWeights& w, const EncoderShape& s, const TokenBatch& batch, ops::OpCost* cost,
                       EncoderOutput output) {
  check_batch(batch, s);  // on the host, where the batch arrives
  if (output == EncoderOutput::every_token) return as_f32(forward(w, s, batch, nullptr, cost));
  const SequenceRows first(size_t(batch.batch()), std::vector<int64_t>{0});
  return as_f32(forward(w, s, batch, &first, cost));
}

Tensor encoder_forward_rows(const EncoderWeights& w, const EncoderShape& s, const TokenBatch& batch,
                            const SequenceRows& rows, ops::OpCost* cost) {
  check_batch(batch, s);
  check_rows(rows, batch.batch(), batch.seq_len());
  check(rows_in_all(rows) > 0, "encoder_forward_rows: no rows asked for");
  return as_f32(forward(w, s, batch, &rows, cost));
}

}  // namespace tach::model
