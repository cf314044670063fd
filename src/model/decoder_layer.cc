#include "model/decoder_layer.h"

#include <string>

#include "core/allocator.h"
#include "core/trace.h"
#include "ops/add.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/rms_norm.h"
#include "tach/error.h"

namespace tach::model {

DecoderRope decoder_rope(const DecoderConfig& c, const Tensor& positions, int64_t length, Device device) {
  auto table = [&](const ops::RopeSettings& r) {
    ops::RopeTable t = ops::rope_table(positions, r, length);
    return ops::RopeTable{t.cos.on(device), t.sin.on(device)};
  };
  DecoderRope rope;
  rope.global = table(c.rope);
  if (c.has_local_rope) rope.local = table(c.local_rope);
  return rope;
}

ops::CausalAttentionArgs decoder_attention_args(const DecoderConfig& c, size_t l, int64_t B, int64_t T, Device device) {
  ops::CausalAttentionArgs a;
  a.B = B, a.Tq = T, a.H = c.num_heads, a.KVH = c.num_kv_heads, a.D = c.head_dim;
  a.ld_q = c.qkv_width(), a.ld_out = c.num_heads * c.head_dim, a.scale = c.attention_scale();
  a.window = c.layer_window[l];
  a.causal = c.causal;
  a.device = device;
  return a;
}

void decoder_norm(const DecoderConfig& c, Tensor& out, Tensor& x, const Tensor& delta, const Tensor& weight,
                  const Tensor& mean, const Tensor& rstd) {
  if (c.layer_norm) ops::pre_layer_norm_forward(out, x, delta, weight, Tensor(), c.norm_eps, mean, rstd);
  else ops::rms_norm_forward(out, x, delta, weight, c.norm_eps, rstd);
}

void decoder_embed(Tensor& h, const Tensor& ids, const Tensor& table, float scale) {
  core::Span span(core::SpanKind::module, "embed_tokens");
  ops::embedding_forward(h, ids, table, false);
  if (scale != 0) ops::scale_inplace(h, scale);
}

namespace {

// dst = src unless they are one tensor (inference updates its stream in place).
void copy_unless_same(Tensor& dst, const Tensor& src) {
  if (dst.raw() != src.raw()) core::copy_bytes(dst.device(), dst.raw(), src.device(), src.raw(), src.nbytes());
}

// The output of a branch (o or down) goes where its norm reads it, or straight to t.branch.
Tensor& branch_target(const DecoderConfig& c, Tensor& before_norm, DecoderLayerTensors& t) {
  return c.sandwich_norms ? before_norm : t.branch;
}

// Gemma's norm on a branch's output: t.branch = norm(before_norm). (Other families have no such
// norm, so its weight is asked for only here.)
void norm_branch(const DecoderConfig& c, size_t l, DecoderNorm which, Tensor& before_norm, const Tensor& rstd,
                 DecoderLayerRunner& run, DecoderLayerTensors& t) {
  if (c.sandwich_norms) ops::rms_norm_forward(t.branch, before_norm, Tensor(), run.norm(l, which), c.norm_eps, rstd);
}

}  // namespace

void decoder_qkv(const DecoderConfig& c, size_t l, int64_t B, int64_t T, const DecoderRope& rope,
                 DecoderLayerTensors& t, DecoderLayerRunner& run) {
  const int64_t H = c.num_heads, KVH = c.num_kv_heads, D = c.head_dim, HD = H * D;
  run.linear(l, DecoderLinear::qkv, t.qkv, t.x1);
  if (c.qk_norm) {
    // qk_raw and qk_rstd hold q's block, then k's: [N, H D] then [N, KVH D] (and [N H], [N KVH]);
    // training saves them, inference leaves them undefined.
    const int64_t N = B * T;
    auto part = [](const Tensor& saved, int64_t start, int64_t length) {
      return saved.defined() ? saved.reshape({saved.numel()}).narrow(0, start, length) : Tensor();
    };
    ops::rms_norm_heads_forward(t.qkv, 0, H, D, run.norm(l, DecoderNorm::q), c.norm_eps, part(t.qk_raw, 0, N * HD),
                                part(t.qk_rstd, 0, N * H));
    ops::rms_norm_heads_forward(t.qkv, HD, KVH, D, run.norm(l, DecoderNorm::k), c.norm_eps,
                                part(t.qk_raw, N * HD, N * KVH * D), part(t.qk_rstd, N * H, N * KVH));
  }
  if (!run.rope_in_attention()) ops::rope_forward(t.qkv, H, KVH, D, rope.of(c, l));  // q, then k columns
}

void decoder_attention_output(const DecoderConfig& c, size_t l, DecoderLayerTensors& t, DecoderLayerRunner& run) {
  Tensor& o_out = branch_target(c, t.attn_out, t);
  run.linear(l, DecoderLinear::o, o_out, t.context);
  norm_branch(c, l, DecoderNorm::attn_out, o_out, t.rstd_ao, run, t);
}

void decoder_mlp_block(const DecoderConfig& c, size_t l, DecoderLayerTensors& t, DecoderLayerRunner& run,
                       const DecoderLayerEnds& ends) {
  // resid_mid = resid + attention; x2 = the MLP norm of resid_mid, in one pass.
  copy_unless_same(t.resid_mid, t.resid);
  decoder_norm(c, t.x2, t.resid_mid, t.branch, run.norm(l, DecoderNorm::mlp), t.mean2, t.rstd2);
  {
    core::Span span(core::SpanKind::module, "mlp");
    run.linear(l, DecoderLinear::gate_up, t.gate_up, t.x2);
    Tensor& down_out = branch_target(c, t.mlp_out, t);
    run.gated_down(l, c.activation, down_out, t);
    norm_branch(c, l, DecoderNorm::mlp_out, down_out, t.rstd_mo, run, t);
  }
  // resid_out = resid_mid + MLP, normed for what follows in the same pass when the caller asks.
  copy_unless_same(t.resid_out, t.resid_mid);
  if (ends.next_norm) {
    Tensor next_x = ends.next_x;
    decoder_norm(c, next_x, t.resid_out, t.branch, *ends.next_norm);
  } else {
    ops::add_inplace(t.resid_out, t.branch);
  }
}

void decoder_layer_forward(const DecoderConfig& c, size_t l, int64_t B, int64_t T, const DecoderRope& rope,
                           DecoderLayerTensors& t, DecoderLayerRunner& run, const DecoderLayerEnds& ends) {
  core::Span layer_span(core::SpanKind::module, core::tracing() ? core::concat("layers.", l) : std::string());
  if (!ends.input_normed) {
    if (l > 0 || c.first_attn_norm)
      decoder_norm(c, t.x1, t.resid, Tensor(), run.norm(l, DecoderNorm::attn), t.mean1, t.rstd1);
    else  // ModernBERT's layer 0: the identity
      copy_unless_same(t.x1, t.resid);
  }
  {
    core::Span span(core::SpanKind::module, "self_attn");
    decoder_qkv(c, l, B, T, rope, t, run);
    run.attention(l, decoder_attention_args(c, l, B, T, t.qkv.device()), t);
    decoder_attention_output(c, l, t, run);
  }
  decoder_mlp_block(c, l, t, run, ends);
}

}  // namespace tach::model
