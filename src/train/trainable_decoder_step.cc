// Any decoder family's classifier: the training forward and its backward, in reverse order of the
// same calls, with DecoderConfig's switches (the inference forward, model/decoder.cc, reads the same).
// Module paths follow transformers' (model.layers.3.self_attn, ...), under "backward." for the
// backward (the caller's profiler scope adds it).
#include <cmath>
#include <cstring>
#include <optional>

#include "core/trace.h"
#include "ops/add.h"
#include "ops/causal_attention.h"
#include "ops/embedding.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "tach/error.h"
#include "train/step_support.h"
#include "train/trainable_decoder.h"

namespace tach::train {

namespace {

using step::f;
using step::g;
using step::wt;
using step::zero;

std::string layer_module(size_t i) { return core::tracing() ? core::concat("layers.", i) : std::string(); }

void prepare(DecoderActivations& a, const TrainableDecoder& m, int64_t B, int64_t T) {
  if (a.B == B && a.T == T) return;
  const bool fused = a.fused, checkpoint = a.checkpoint;
  const model::DecoderConfig& s = m.config;
  const int64_t N = B * T, C = s.hidden_size, I = s.intermediate_size, QKV = s.qkv_width(), D = s.head_dim;
  const int64_t HD = s.num_heads * D, QK = s.num_heads + s.num_kv_heads;
  auto make = [](const Shape& shape) { return Tensor::empty(shape, DType::f32, Device::cpu(), MemoryCategory::activations); };
  a = DecoderActivations{};
  a.fused = fused;
  a.checkpoint = checkpoint;
  a.B = B;
  a.T = T;
  a.layers.resize(size_t(s.num_layers));
  for (auto& l : a.layers) {
    l.resid_in = make({N, C});
    if (checkpoint && &l != &a.layers.front()) {
      // Every layer's intermediates in the first layer's buffers: only the inputs are kept.
      const Tensor input = l.resid_in;
      l = a.layers.front();
      l.resid_in = input;
      continue;
    }
    l.rstd1 = make({N});
    l.x1 = make({N, C});
    if (s.qk_norm) l.qk_raw = make({N, QK * D}), l.qk_rstd = make({N, QK});
    l.qkv = make({N, QKV});
    if (!fused) l.probs = make({B, s.num_heads, T, T});
    l.context = make({N, HD});
    if (s.sandwich_norms) l.attn_out = make({N, C}), l.rstd_ao = make({N}), l.mlp_out = make({N, C}), l.rstd_mo = make({N});
    l.resid_mid = make({N, C});
    l.rstd2 = make({N});
    l.x2 = make({N, C});
    l.gate_up = make({N, 2 * I});
    l.act = make({N, I});
  }
  a.resid_out = make({N, C});
  a.pooled_in = make({B, C});
  a.final_rstd = make({B});
  a.pooled = make({B, C});
  a.logits = make({B, m.num_labels()});
  a.d_resid = make({N, C});
  a.d_x = make({N, C});
  a.d_qkv = make({N, QKV});
  a.d_context = make({N, HD});
  a.d_gate_up = make({N, 2 * I});
  a.d_act = make({N, I});
  if (s.sandwich_norms) a.d_branch = make({N, C});
  a.scratch = make({N, C});
  a.d_pooled = make({B, C});
  a.d_pooled_in = make({B, C});
  // transformers' forward without position_ids: positions 0..T-1 in every row.
  Tensor positions = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) positions.data<int32_t>()[i] = int32_t(i % T);
  a.rope = ops::rope_table(positions, s.rope, T);
  if (s.has_local_rope) a.local_rope = ops::rope_table(positions, s.local_rope, T);
}

ops::CausalAttentionArgs attention_args(const model::DecoderConfig& s, int64_t B, int64_t T, size_t layer) {
  ops::CausalAttentionArgs a;
  a.B = B, a.Tq = T, a.past = 0, a.H = s.num_heads, a.KVH = s.num_kv_heads, a.D = s.head_dim;
  a.ld_q = a.ld_kv = s.qkv_width();  // q, k and v read straight from the fused buffer
  a.batch_stride_kv = T * s.qkv_width();
  a.ld_out = s.num_heads * s.head_dim;
  a.mask_stride = T;
  a.scale = s.attention_scale();
  a.window = s.layer_window[layer];
  return a;
}

const ops::RopeTable& layer_rope(const DecoderActivations& a, const model::DecoderConfig& s, size_t layer) {
  return s.has_local_rope && s.layer_window[layer] > 0 ? a.local_rope : a.rope;
}

const float* bias_of(const FusedTensor& t) { return t.value.defined() ? f(t.value) : nullptr; }
const float* bias_of(const Parameter* p) { return p ? f(p) : nullptr; }
float* bias_grad(const FusedTensor& t) { return t.value.defined() ? g(t) : nullptr; }
float* bias_grad(const Parameter* p) { return p ? g(p) : nullptr; }

// transformers' rule: per row, the last token that is not pad_token_id (position 0 when all
// are); the last position when the config names no pad token, for a batch of one.
std::vector<int64_t> last_tokens(const TrainableDecoder& m, const TokenBatch& batch) {
  const int64_t B = batch.batch(), T = batch.seq_len();
  const int64_t pad = m.config.pad_token_id;
  check(pad >= 0 || B == 1, "config.json names no pad_token_id, so rows of a batch cannot be told from padding; set "
                            "pad_token_id (Qwen2.5 uses <|endoftext|>, 151643; Llama 3 models often <|finetune_right_pad_id|>) "
                            "or train with batch 1");
  const int32_t* ids = batch.input_ids.data<int32_t>();
  std::vector<int64_t> last(size_t(B), pad < 0 ? T - 1 : 0);
  if (pad >= 0)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        if (ids[b * T + t] != pad) last[size_t(b)] = t;
  return last;
}

void check_batch(const TrainableDecoder& m, const TokenBatch& batch) {
  check(batch.input_ids.defined() && batch.input_ids.dim() == 2 && batch.input_ids.dtype() == DType::i32 &&
            batch.batch() > 0 && batch.seq_len() > 0,
        "input_ids must be a non-empty i32 [batch, seq]");
  check(batch.attention_mask.defined() && batch.attention_mask.shape() == batch.input_ids.shape() &&
            batch.attention_mask.dtype() == DType::i32,
        "attention_mask must be i32 " + shape_str(batch.input_ids.shape()));
  const int32_t* ids = batch.input_ids.data<int32_t>();
  for (int64_t i = 0; i < batch.input_ids.numel(); ++i)
    check(ids[i] >= 0 && ids[i] < m.config.vocab_size, "input id " + std::to_string(ids[i]) +
                                                     " is outside the vocabulary of " + std::to_string(m.config.vocab_size));
}

void lora_fwd(const TrainableDecoder& m, const std::vector<int64_t>& ids, float* y, int64_t ldy, const float* x, int64_t M,
              DecoderActivations& a, const DropoutRates& dr) {
  if (m.lora) m.lora->forward(ids, y, ldy, x, M, a.lora, dr);
}

void lora_bwd(const TrainableDecoder& m, const std::vector<int64_t>& ids, float* dx, const float* dy, int64_t ldy,
              const float* x, int64_t M, DecoderActivations& a, const DropoutRates& dr) {
  if (m.lora) m.lora->backward(ids, dx, dy, ldy, x, M, a.lora, dr);
}

}  // namespace

// One layer's forward: from a.layers[li].resid_in to the next layer's (or a.resid_out), keeping
// what its backward needs. The backward calls it again under gradient checkpointing.
void TrainableDecoder::layer_forward(DecoderActivations& a, size_t li, const int32_t* mask, const DropoutRates& dr) const {
  const model::DecoderConfig& c = config;
  const int64_t B = a.B, T = a.T, N = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_heads, KVH = c.num_kv_heads, D = c.head_dim, HD = H * D, KD = KVH * D;
  const int64_t QKV = c.qkv_width();
  const float eps = c.rms_norm_eps;
  const ops::CausalAttentionArgs args = attention_args(c, B, T, li);
  const TrainableDecoderLayer& w = layers[li];
  DecoderLayerActivations& s = a.layers[li];
  core::Span layer_span(core::SpanKind::module, layer_module(li));
  {
    OpSpan o("rms_norm", ops::rms_norm_cost(N, C, false));
    ops::rms_norm_forward_cpu(f(s.x1), f(s.resid_in), nullptr, norm_weight(w.attn_norm), N, C, eps, f(s.rstd1));
  }
  {
    core::Span span(core::SpanKind::module, "self_attn");
    step::linear_forward(f(s.qkv), f(s.x1), wt(w.qkv_weight), bias_of(w.qkv_bias), N, QKV, C);
    lora_fwd(*this, w.qkv_lora, f(s.qkv), QKV, f(s.x1), N, a, dr);  // before the norms and RoPE, as PEFT's q_proj
    if (c.qk_norm) {
      OpSpan o("rms_norm_heads", ops::rms_norm_heads_cost(N, H + KVH, D));
      ops::rms_norm_heads_forward_cpu(f(s.qkv), QKV, N, H, D, norm_weight(w.q_norm), eps, f(s.qk_raw), f(s.qk_rstd));
      // qk_raw holds two blocks: q's [N, H D], then k's [N, KVH D] (and qk_rstd [N H], then [N KVH]).
      ops::rms_norm_heads_forward_cpu(f(s.qkv) + HD, QKV, N, KVH, D, norm_weight(w.k_norm), eps, f(s.qk_raw) + N * HD,
                                      f(s.qk_rstd) + N * H);
    }
    ops::rope_forward(s.qkv, H, KVH, D, layer_rope(a, c, li));
    ops::causal_attention_forward_train(f(s.context), a.fused ? nullptr : f(s.probs), f(s.qkv), f(s.qkv) + HD,
                                        f(s.qkv) + HD + KD, mask, args);
    float* o_out = c.sandwich_norms ? f(s.attn_out) : f(a.scratch);
    step::linear_forward(o_out, f(s.context), wt(w.o_proj), bias_of(w.o_bias), N, C, HD);
    lora_fwd(*this, w.o_lora, o_out, C, f(s.context), N, a, dr);
    if (c.sandwich_norms) {
      OpSpan o("rms_norm", ops::rms_norm_cost(N, C, false));
      ops::rms_norm_forward_cpu(f(a.scratch), o_out, nullptr, norm_weight(w.attn_out_norm), N, C, eps, f(s.rstd_ao));
    }
  }
  // resid_mid = resid_in + attention; x2 = the MLP norm of resid_mid, in one pass.
  std::memcpy(f(s.resid_mid), f(s.resid_in), s.resid_in.nbytes());
  {
    OpSpan o("rms_norm", ops::rms_norm_cost(N, C, true));
    ops::rms_norm_forward_cpu(f(s.x2), f(s.resid_mid), f(a.scratch), norm_weight(w.mlp_norm), N, C, eps, f(s.rstd2));
  }
  core::Span span(core::SpanKind::module, "mlp");
  step::linear_forward(f(s.gate_up), f(s.x2), wt(w.gate_up), bias_of(w.gate_up_bias), N, 2 * I, C);
  lora_fwd(*this, w.gate_up_lora, f(s.gate_up), 2 * I, f(s.x2), N, a, dr);
  ops::silu_gate_forward(s.act, s.gate_up, c.activation);
  float* down_out = c.sandwich_norms ? f(s.mlp_out) : f(a.scratch);
  step::linear_forward(down_out, f(s.act), wt(w.down), bias_of(w.down_bias), N, C, I);
  lora_fwd(*this, w.down_lora, down_out, C, f(s.act), N, a, dr);
  if (c.sandwich_norms) {
    OpSpan o("rms_norm", ops::rms_norm_cost(N, C, false));
    ops::rms_norm_forward_cpu(f(a.scratch), down_out, nullptr, norm_weight(w.mlp_out_norm), N, C, eps, f(s.rstd_mo));
  }
  const Tensor& out = li + 1 < layers.size() ? a.layers[li + 1].resid_in : a.resid_out;
  std::memcpy(f(out), f(s.resid_mid), s.resid_mid.nbytes());
  ops::add_inplace(f(out), f(a.scratch), N * C);
}

void TrainableDecoder::forward(ForwardState& state, const TokenBatch& batch, const DropoutRates& dr) const {
  auto& a = dynamic_cast<DecoderActivations&>(state);
  check_batch(*this, batch);
  const int64_t B = batch.batch(), T = batch.seq_len(), N = B * T, C = config.hidden_size, L = num_labels();
  prepare(a, *this, B, T);
  refresh_applied_norms();
  a.last = last_tokens(*this, batch);
  const int32_t* mask = batch.attention_mask.data<int32_t>();

  std::optional<core::Span> model_span(std::in_place, core::SpanKind::module, "model");
  {
    core::Span span(core::SpanKind::module, "embed_tokens");
    OpSpan o("embedding", ops::embedding_cost(N, C, DType::f32));
    ops::embedding_forward_cpu(f(a.layers[0].resid_in), batch.input_ids.data<int32_t>(), f(embed), DType::f32, N, C,
                               false);
    if (embed_scale != 0) ops::scale_inplace(a.layers[0].resid_in, embed_scale);
  }
  for (size_t li = 0; li < layers.size(); ++li) layer_forward(a, li, mask, dr);
  {
    // The final norm is per row, so it runs on the rows the head reads only.
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(f(a.pooled_in) + b * C, f(a.resid_out) + (b * T + a.last[size_t(b)]) * C, sizeof(float) * size_t(C));
    core::Span span(core::SpanKind::module, names.final_norm);
    OpSpan o("rms_norm", ops::rms_norm_cost(B, C, false));
    ops::rms_norm_forward_cpu(f(a.pooled), f(a.pooled_in), nullptr, norm_weight(final_norm), B, C, config.rms_norm_eps,
                              f(a.final_rstd));
  }
  model_span.reset();
  core::Span head_span(core::SpanKind::module, "score");
  OpSpan o("linear", ops::linear_cost(B, L, C, DType::f32, false));
  ops::linear_forward_cpu(f(a.logits), f(a.pooled), f(score), nullptr, B, L, C);
}

void TrainableDecoder::backward(ForwardState& state, const TokenBatch& batch, const float* d_logits,
                                const DropoutRates& dr) {
  auto& a = dynamic_cast<DecoderActivations&>(state);
  const model::DecoderConfig& c = config;
  const int64_t B = a.B, T = a.T, N = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_heads, KVH = c.num_kv_heads, D = c.head_dim, HD = H * D, KD = KVH * D;
  const int64_t QKV = c.qkv_width(), L = num_labels();
  const int32_t* mask = batch.attention_mask.data<int32_t>();
  {
    core::Span head_span(core::SpanKind::module, "score");
    zero(a.d_pooled);
    step::linear_backward(f(a.d_pooled), g(score), nullptr, d_logits, f(a.pooled), f(score), B, L, C);
  }
  core::Span model_span(core::SpanKind::module, "model");
  {
    core::Span span(core::SpanKind::module, names.final_norm);
    zero(a.d_pooled_in);
    OpSpan o("rms_norm_backward", ops::rms_norm_backward_cost(B, C));
    ops::rms_norm_backward_cpu(f(a.d_pooled_in), g(final_norm), f(a.d_pooled), f(a.pooled_in), norm_weight(final_norm),
                               f(a.final_rstd), B, C);
  }
  // Only each row's last real token reaches the head.
  zero(a.d_resid);
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(f(a.d_resid) + (b * T + a.last[size_t(b)]) * C, f(a.d_pooled_in) + b * C, sizeof(float) * size_t(C));

  // A branch's output gradient: d_resid itself, or through the norm on the branch's output
  // (sandwich norms) into d_branch.
  auto branch_grad = [&](Parameter* out_norm, const Tensor& branch_out, const Tensor& rstd) -> float* {
    if (!out_norm) return f(a.d_resid);
    zero(a.d_branch);
    OpSpan o("rms_norm_backward", ops::rms_norm_backward_cost(N, C));
    ops::rms_norm_backward_cpu(f(a.d_branch), g(out_norm), f(a.d_resid), f(branch_out), norm_weight(out_norm), f(rstd), N, C);
    return f(a.d_branch);
  };

  for (size_t li = layers.size(); li-- > 0;) {
    TrainableDecoderLayer& w = layers[li];
    DecoderLayerActivations& s = a.layers[li];
    const ops::CausalAttentionArgs args = attention_args(c, B, T, li);
    if (a.checkpoint) {
      // The layer's intermediates were overwritten by the layers after it: recompute them.
      core::Span span(core::SpanKind::module, "recompute");
      layer_forward(a, li, mask, dr);
    }
    core::Span layer_span(core::SpanKind::module, layer_module(li));
    // d_resid: d(layer output) on entry; the residual passes it on unchanged, and each branch's
    // norm backward adds its share: d(resid_mid), then d(resid_in) on exit.
    {
      core::Span span(core::SpanKind::module, "mlp");
      const float* dy = branch_grad(w.mlp_out_norm, s.mlp_out, s.rstd_mo);
      zero(a.d_act);
      step::linear_backward(f(a.d_act), g(w.down), bias_grad(w.down_bias), dy, f(s.act), wt(w.down), N, C, I);
      lora_bwd(*this, w.down_lora, f(a.d_act), dy, C, f(s.act), N, a, dr);
      ops::silu_gate_backward(a.d_gate_up, s.gate_up, a.d_act, c.activation);
      zero(a.d_x);
      step::linear_backward(f(a.d_x), g(w.gate_up), bias_grad(w.gate_up_bias), f(a.d_gate_up), f(s.x2), wt(w.gate_up), N,
                            2 * I, C);
      lora_bwd(*this, w.gate_up_lora, f(a.d_x), f(a.d_gate_up), 2 * I, f(s.x2), N, a, dr);
    }
    {
      OpSpan o("rms_norm_backward", ops::rms_norm_backward_cost(N, C));
      ops::rms_norm_backward_cpu(f(a.d_resid), g(w.mlp_norm), f(a.d_x), f(s.resid_mid), norm_weight(w.mlp_norm),
                                 f(s.rstd2), N, C);
    }
    {
      core::Span span(core::SpanKind::module, "self_attn");
      const float* dy = branch_grad(w.attn_out_norm, s.attn_out, s.rstd_ao);
      zero(a.d_context);
      step::linear_backward(f(a.d_context), g(w.o_proj), bias_grad(w.o_bias), dy, f(s.context), wt(w.o_proj), N, C, HD);
      lora_bwd(*this, w.o_lora, f(a.d_context), dy, C, f(s.context), N, a, dr);
      ops::causal_attention_backward(f(a.d_qkv), f(a.d_qkv) + HD, f(a.d_qkv) + HD + KD, f(a.d_context),
                                     a.fused ? nullptr : f(s.probs), f(s.qkv), f(s.qkv) + HD, f(s.qkv) + HD + KD, mask,
                                     args);
      ops::rope_backward(a.d_qkv, H, KVH, D, layer_rope(a, c, li));
      if (c.qk_norm) {
        OpSpan o("rms_norm_heads_backward", ops::rms_norm_heads_cost(N, H + KVH, D));
        ops::rms_norm_heads_backward_cpu(f(a.d_qkv), QKV, f(s.qk_raw), norm_weight(w.q_norm), f(s.qk_rstd), g(w.q_norm), N,
                                         H, D);
        ops::rms_norm_heads_backward_cpu(f(a.d_qkv) + HD, QKV, f(s.qk_raw) + N * HD, norm_weight(w.k_norm),
                                         f(s.qk_rstd) + N * H, g(w.k_norm), N, KVH, D);
      }
      zero(a.d_x);
      step::linear_backward(f(a.d_x), g(w.qkv_weight), bias_grad(w.qkv_bias), f(a.d_qkv), f(s.x1), wt(w.qkv_weight), N,
                            QKV, C);
      lora_bwd(*this, w.qkv_lora, f(a.d_x), f(a.d_qkv), QKV, f(s.x1), N, a, dr);
    }
    OpSpan o("rms_norm_backward", ops::rms_norm_backward_cost(N, C));
    ops::rms_norm_backward_cpu(f(a.d_resid), g(w.attn_norm), f(a.d_x), f(s.resid_in), norm_weight(w.attn_norm), f(s.rstd1),
                               N, C);
  }
  core::Span span(core::SpanKind::module, names.embed);
  if (embed_scale != 0) ops::scale_inplace(a.d_resid, embed_scale);  // h = scale * embed[ids]
  OpSpan o("embedding_backward", ops::embedding_backward_cost(N, C));
  // nn.Embedding(padding_idx=pad_token_id): the pad row gets no gradient.
  ops::embedding_backward_cpu(g(embed), batch.input_ids.data<int32_t>(), f(a.d_resid), N, C,
                              int32_t(config.pad_token_id));
}

}  // namespace tach::train
