#include "model/qwen2.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "core/allocator.h"
#include "core/trace.h"

#include "model/encoder_build.h"
#include "ops/causal_attention.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/silu_gate.h"
#include "tach/error.h"

namespace tach::model {

Qwen2Shape qwen2_shape(const Qwen2Config& c) {
  Qwen2Shape s;
  s.layers = c.num_layers;
  s.hidden = c.hidden_size;
  s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.intermediate = c.intermediate_size;
  s.vocab = c.vocab_size;
  s.max_positions = c.max_position_embeddings;
  s.eps = c.rms_norm_eps;
  s.rope = {c.head_dim, c.rope_theta, c.rope_type, c.rope_factor, c.max_position_embeddings};
  return s;
}

Qwen2Weights build_qwen2(const Qwen2Config& c, WeightBinder& w, const ops::LinearPlacement& place) {
  const int64_t C = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
  const int64_t HD = c.num_heads * D, KD = c.num_kv_heads * D;
  Qwen2Weights m;
  m.embed_tokens = on_device(w.take("embed_tokens.weight", {c.vocab_size, C}), place.device);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    Qwen2Layer L;
    L.input_norm = to_f32_param(w.take(p + "input_layernorm.weight", {C}), place.device);
    Tensor wq = w.take(p + "self_attn.q_proj.weight", {HD, C});
    Tensor bq = w.take(p + "self_attn.q_proj.bias", {HD});
    Tensor wk = w.take(p + "self_attn.k_proj.weight", {KD, C});
    Tensor bk = w.take(p + "self_attn.k_proj.bias", {KD});
    Tensor wv = w.take(p + "self_attn.v_proj.weight", {KD, C});
    Tensor bv = w.take(p + "self_attn.v_proj.bias", {KD});
    L.qkv = pack_linear(concat_rows(wq, wk, wv), concat_rows(bq, bk, bv), place);
    L.o_proj = pack_linear(w.take(p + "self_attn.o_proj.weight", {C, HD}), Tensor(), place);
    L.post_attention_norm = to_f32_param(w.take(p + "post_attention_layernorm.weight", {C}), place.device);
    Tensor wg = w.take(p + "mlp.gate_proj.weight", {I, C});
    Tensor wu = w.take(p + "mlp.up_proj.weight", {I, C});
    L.gate_up = pack_linear(concat_rows({&wg, &wu}), Tensor(), place);
    L.down = pack_linear(w.take(p + "mlp.down_proj.weight", {C, I}), Tensor(), place);
    m.layers.push_back(std::move(L));
  }
  m.final_norm = to_f32_param(w.take("norm.weight", {C}), place.device);
  if (c.classification_head) m.score = pack_linear(w.take_head("score.weight", {c.num_labels(), C}), Tensor(), place);
  if (c.tie_word_embeddings)
    m.lm_head_weight = m.embed_tokens;
  else if (c.causal_lm)
    m.lm_head_weight = w.take_head("lm_head.weight", {c.vocab_size, C});
  return m;
}

KvCache make_kv_cache(const Qwen2Shape& s, int64_t batch, int64_t capacity, Device device) {
  KvCache c;
  c.capacity = capacity;
  const int64_t KD = s.kv_heads * s.head_dim;
  for (int64_t l = 0; l < s.layers; ++l) {
    c.k.push_back(Tensor::empty({batch, capacity, KD}, DType::f32, device, MemoryCategory::activations));
    c.v.push_back(Tensor::empty({batch, capacity, KD}, DType::f32, device, MemoryCategory::activations));
  }
  c.host_mask = Tensor::zeros({batch, capacity}, DType::i32);
  c.mask = device.kind == DeviceKind::cpu ? c.host_mask : Tensor::zeros({batch, capacity}, DType::i32, device);
  return c;
}

ops::OpCost qwen2_cost(const Qwen2Shape& s, int64_t B, int64_t T, int64_t past) {
  const int64_t N = B * T, C = s.hidden, I = s.intermediate, D = s.head_dim;
  ops::OpCost c = ops::embedding_cost(N, C, DType::f32);
  ops::OpCost layer = ops::rms_norm_cost(N, C, true);
  layer += ops::linear_cost(N, s.qkv_width(), C, DType::f32, true);
  layer += ops::rope_cost(N, s.heads + s.kv_heads, D);
  layer += ops::causal_attention_cost(B, T, past + T, s.heads, s.kv_heads, D);
  layer += ops::linear_cost(N, C, s.heads * D, DType::f32, false);
  layer += ops::rms_norm_cost(N, C, true);
  layer += ops::linear_cost(N, 2 * I, C, DType::f32, false);
  layer += ops::silu_gate_cost(N, I);
  layer += ops::linear_cost(N, C, I, DType::f32, false);
  for (int64_t i = 0; i < s.layers; ++i) c += layer;
  return c;
}

namespace {
// The host mask's new state, whole, to the device copy the kernel reads.
void upload_cache_mask(KvCache& cache) {
  core::copy_bytes(cache.mask.device(), cache.mask.raw(), Device::cpu(), cache.host_mask.raw(), cache.host_mask.nbytes());
}
}  // namespace

Tensor qwen2_forward(const Qwen2Weights& w, const Qwen2Shape& s, const Tensor& ids, const Tensor& mask,
                     const Tensor& positions, KvCache* cache) {
  const int64_t B = ids.size(0), T = ids.size(1), N = B * T, C = s.hidden, I = s.intermediate, D = s.head_dim;
  const int64_t H = s.heads, KVH = s.kv_heads, HD = H * D, KD = KVH * D, QKV = s.qkv_width();
  const int64_t past = cache ? cache->length : 0;
  check(!cache || past + T <= cache->capacity, "the key/value cache holds " + std::to_string(cache ? cache->capacity : 0) +
                                                   " positions; " + std::to_string(past + T) + " are needed");
  // The model's device is where its weights are; ids, mask and positions arrive on the host.
  const Device device = w.final_norm.device();
  const bool on_host = device.kind == DeviceKind::cpu;

  // The rotary table of this call's positions, shared by every layer (computed on the host).
  int32_t max_pos = 0;
  for (int64_t i = 0; i < N; ++i) max_pos = std::max(max_pos, positions.data<int32_t>()[i]);
  ops::RopeTable rope = ops::rope_table(positions, ops::rope_inverse_frequencies(s.rope, int64_t(max_pos) + 1));
  rope = {rope.cos.on(device), rope.sin.on(device)};

  // Keys visible to this call: the cache's mask (with this call's tokens appended) or this mask.
  Tensor call_mask;
  const int32_t* key_mask = nullptr;
  int64_t mask_stride = T;
  if (cache) {
    int32_t* cm = cache->host_mask.data<int32_t>();
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(cm + b * cache->capacity + past, mask.data<int32_t>() + b * T, size_t(T) * sizeof(int32_t));
    if (!on_host) upload_cache_mask(*cache);
    key_mask = cache->mask.data<int32_t>();
    mask_stride = cache->capacity;
  } else {
    call_mask = mask.on(device);
    key_mask = call_mask.data<int32_t>();
  }

  core::Span model_span(core::SpanKind::module, "model");
  Tensor h = Tensor::empty({N, C}, DType::f32, device);
  {
    core::Span span(core::SpanKind::module, "embed_tokens");
    ops::embedding_forward(h, ids.on(device), w.embed_tokens, false);
  }
  Tensor x = Tensor::empty({N, C}, DType::f32, device);
  Tensor qkv = Tensor::empty({N, QKV}, DType::f32, device);
  Tensor ctx = Tensor::empty({N, HD}, DType::f32, device);
  Tensor delta = Tensor::empty({N, C}, DType::f32, device);
  Tensor gate_up = Tensor::empty({N, 2 * I}, DType::f32, device);
  Tensor act = Tensor::empty({N, I}, DType::f32, device);
  ops::rms_norm_forward(x, h, Tensor(), w.layers.front().input_norm, s.eps);
  const float scale = 1.0f / std::sqrt(float(D));
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const Qwen2Layer& L = w.layers[l];
    core::Span layer_span(core::SpanKind::module, core::tracing() ? core::concat("layers.", l) : std::string());
    std::optional<core::Span> attn_span(std::in_place, core::SpanKind::module, "self_attn");
    ops::linear_forward(qkv, x, *L.qkv);
    ops::rope_forward(qkv, H, KVH, D, rope);  // q columns [0, HD), k columns [HD, HD + KD)
    const float* q = qkv.data<float>();
    ops::CausalAttentionArgs a;
    a.B = B, a.Tq = T, a.past = past, a.H = H, a.KVH = KVH, a.D = D;
    a.ld_q = QKV, a.ld_out = HD, a.scale = scale, a.mask_stride = mask_stride, a.device = device;
    const float* k = q + HD;
    const float* v = q + HD + KD;
    if (cache) {
      // Append this call's keys and values: rows [past, past + T) of each sequence.
      float* ck = cache->k[l].data<float>();
      float* cv = cache->v[l].data<float>();
      for (int64_t b = 0; b < B; ++b) {
        const float* rows = q + b * T * QKV;  // this sequence's T rows of q|k|v
        ops::copy_rows(device, ck + (b * cache->capacity + past) * KD, KD, rows + HD, QKV, T, KD);
        ops::copy_rows(device, cv + (b * cache->capacity + past) * KD, KD, rows + HD + KD, QKV, T, KD);
      }
      k = ck, v = cv;
      a.ld_kv = KD, a.batch_stride_kv = cache->capacity * KD;
    } else {
      a.ld_kv = QKV, a.batch_stride_kv = T * QKV;  // read straight from the fused buffer
    }
    ops::causal_attention_forward(ctx.data<float>(), q, k, v, key_mask, a);
    ops::linear_forward(delta, ctx, *L.o_proj);
    attn_span.reset();
    ops::rms_norm_forward(x, h, delta, L.post_attention_norm, s.eps);  // h += attn; x = norm(h)
    std::optional<core::Span> mlp_span(std::in_place, core::SpanKind::module, "mlp");
    ops::linear_forward(gate_up, x, *L.gate_up);
    ops::silu_gate_forward(act, gate_up);
    ops::linear_forward(delta, act, *L.down);
    mlp_span.reset();
    const Tensor& next_norm = l + 1 < w.layers.size() ? w.layers[l + 1].input_norm : w.final_norm;
    ops::rms_norm_forward(x, h, delta, next_norm, s.eps);  // h += mlp; x = norm(h) for what follows
  }
  if (cache) cache->length += T;
  return x.reshape({B, T, C});
}

}  // namespace tach::model
