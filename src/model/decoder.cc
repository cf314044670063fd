#include "model/decoder.h"

#include <cmath>
#include <cstring>

#include "core/allocator.h"
#include "core/trace.h"

#include "model/decoder_layer.h"
#include "model/encoder_build.h"
#include "ops/causal_attention.h"
#include "ops/add.h"
#include "ops/embedding.h"
#include "ops/kv_append.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/silu_gate.h"
#include "tach/error.h"

namespace tach::model {

Tensor applied_norm(const Tensor& stored_f32, const DecoderConfig& c) {
  if (!c.norm_plus_one) return stored_f32;
  Tensor w = stored_f32.device().kind == DeviceKind::cpu ? stored_f32 : stored_f32.on(Device::cpu());
  Tensor out = Tensor::empty(w.shape(), DType::f32, Device::cpu(), MemoryCategory::weights);
  for (int64_t i = 0; i < w.numel(); ++i) out.data<float>()[i] = 1.0f + w.data<float>()[i];
  return out.on(stored_f32.device());
}

float embedding_scale(const DecoderConfig& c, DType compute) {
  if (!c.scale_embeddings) return 0;
  const float s = float(std::sqrt(double(c.hidden_size)));
  // int8 and nf4 quantize only the linears: the embeddings stay f32.
  if (compute == DType::f32 || compute == DType::i8 || compute == DType::nf4) return s;
  Tensor one = Tensor::empty({1}, DType::f32);
  one.data<float>()[0] = s;
  return one.to(compute).to(DType::f32).data<float>()[0];  // rounded as that dtype rounds it
}

namespace {

// A stored norm weight, in f32 on the device, as applied.
Tensor take_norm(WeightBinder& w, const std::string& name, int64_t n, const DecoderConfig& c, Device device) {
  return applied_norm(to_f32_param(w.take(name + ".weight", {n}), Device::cpu()), c).on(device);
}

Tensor take_bias(WeightBinder& w, bool has, const std::string& module, int64_t n) {
  return has ? w.take(module + ".bias", {n}) : Tensor();
}

}  // namespace

DecoderWeights build_decoder(const DecoderConfig& c, const DecoderTensorNames& n, WeightBinder& w,
                             const ops::LinearPlacement& place) {
  const int64_t C = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
  const int64_t HD = c.num_heads * D, KD = c.num_kv_heads * D;
  DecoderWeights m;
  m.embed_tokens = on_device(w.take(n.embed + ".weight", {c.vocab_size, C}), place.device);
  m.embed_scale = embedding_scale(c, place.compute);
  if (c.embedding_norm) m.embed_norm = take_norm(w, n.embed_norm, C, c, place.device);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    DecoderLayer L;
    if (i > 0 || c.first_attn_norm) L.attn_norm = take_norm(w, p + n.attn_norm, C, c, place.device);
    if (!n.qkv_fused.empty()) {
      const int64_t QKV = c.qkv_width();
      L.qkv = pack_linear(w.take(p + n.qkv_fused + ".weight", {QKV, C}), take_bias(w, c.qkv_bias, p + n.qkv_fused, QKV),
                          place);
    } else {
      Tensor wq = w.take(p + n.q + ".weight", {HD, C}), bq = take_bias(w, c.qkv_bias, p + n.q, HD);
      Tensor wk = w.take(p + n.k + ".weight", {KD, C}), bk = take_bias(w, c.qkv_bias, p + n.k, KD);
      Tensor wv = w.take(p + n.v + ".weight", {KD, C}), bv = take_bias(w, c.qkv_bias, p + n.v, KD);
      L.qkv = pack_linear(concat_rows(wq, wk, wv), c.qkv_bias ? concat_rows(bq, bk, bv) : Tensor(), place);
    }
    if (c.qk_norm) {
      L.q_norm = take_norm(w, p + n.q_norm, D, c, place.device);
      L.k_norm = take_norm(w, p + n.k_norm, D, c, place.device);
    }
    L.o_proj = pack_linear(w.take(p + n.o + ".weight", {C, HD}), take_bias(w, c.o_bias, p + n.o, C), place);
    if (c.sandwich_norms) {
      L.attn_out_norm = take_norm(w, p + n.attn_out_norm, C, c, place.device);
      L.mlp_out_norm = take_norm(w, p + n.mlp_out_norm, C, c, place.device);
    }
    L.mlp_norm = take_norm(w, p + n.mlp_norm, C, c, place.device);
    if (!n.gate_up_fused.empty()) {
      L.gate_up = pack_linear(w.take(p + n.gate_up_fused + ".weight", {2 * I, C}),
                              take_bias(w, c.mlp_bias, p + n.gate_up_fused, 2 * I), place);
    } else {
      Tensor wg = w.take(p + n.gate + ".weight", {I, C}), bg = take_bias(w, c.mlp_bias, p + n.gate, I);
      Tensor wu = w.take(p + n.up + ".weight", {I, C}), bu = take_bias(w, c.mlp_bias, p + n.up, I);
      L.gate_up = pack_linear(concat_rows({&wg, &wu}), c.mlp_bias ? concat_rows({&bg, &bu}) : Tensor(), place);
    }
    L.down = pack_linear(w.take(p + n.down + ".weight", {C, I}), take_bias(w, c.mlp_bias, p + n.down, C), place);
    m.layers.push_back(std::move(L));
  }
  m.final_norm = take_norm(w, n.final_norm, C, c, place.device);
  if (c.classification_head) {
    if (c.head_mlp) {  // ModernBERT: head.dense (GELU fused), head.norm, then the classifier
      m.head_dense = pack_linear(w.take_head(n.head_dense + ".weight", {C, C}),
                                 c.head_dense_bias ? w.take_head(n.head_dense + ".bias", {C}) : Tensor(), place,
                                 cpu::FusedActivation::gelu_erf);
      m.head_norm =
          applied_norm(to_f32_param(w.take_head(n.head_norm + ".weight", {C}), Device::cpu()), c).on(place.device);
    }
    const std::string score = c.head_mlp ? "classifier" : "score";
    m.score = pack_linear(w.take_head(score + ".weight", {c.num_labels(), C}),
                          c.classifier_bias ? w.take_head(score + ".bias", {c.num_labels()}) : Tensor(), place);
  }
  if (c.tie_word_embeddings) m.lm_head_weight = m.embed_tokens;
  else if (c.causal_lm) m.lm_head_weight = w.take_head("lm_head.weight", {c.vocab_size, C});
  return m;
}

KvCache make_kv_cache(const DecoderConfig& s, int64_t batch, int64_t capacity, Device device) {
  KvCache c;
  c.capacity = capacity;
  const int64_t KD = s.num_kv_heads * s.head_dim;
  for (int64_t l = 0; l < s.num_layers; ++l) {
    c.k.push_back(Tensor::empty({batch, capacity, KD}, DType::f32, device, MemoryCategory::activations));
    c.v.push_back(Tensor::empty({batch, capacity, KD}, DType::f32, device, MemoryCategory::activations));
  }
  c.host_mask = Tensor::zeros({batch, capacity}, DType::i32);
  c.mask = device.kind == DeviceKind::cpu ? c.host_mask : Tensor::zeros({batch, capacity}, DType::i32, device);
  return c;
}

int64_t body_weight_bytes(const DecoderWeights& w) {
  const auto norm = [](const Tensor& t) { return t.defined() ? int64_t(t.nbytes()) : 0; };
  const auto linear = [](const std::unique_ptr<ops::Linear>& l) { return l ? l->weight_bytes() : 0; };
  int64_t bytes = norm(w.final_norm) + norm(w.embed_norm);
  for (const DecoderLayer& l : w.layers)
    bytes += linear(l.qkv) + linear(l.o_proj) + linear(l.gate_up) + linear(l.down) + norm(l.attn_norm) +
             norm(l.mlp_norm) + norm(l.attn_out_norm) + norm(l.mlp_out_norm) + norm(l.q_norm) + norm(l.k_norm);
  return bytes;
}

int64_t kv_cache_bytes(const DecoderConfig& c, int64_t B, int64_t length) {
  return 2 * c.num_layers * B * length * c.num_kv_heads * c.head_dim * int64_t(sizeof(float));
}

ops::OpCost decoder_cost(const DecoderConfig& s, int64_t B, int64_t T, int64_t past) {
  const int64_t N = B * T, C = s.hidden_size, I = s.intermediate_size, D = s.head_dim;
  const int64_t H = s.num_heads, KVH = s.num_kv_heads;
  ops::OpCost c = ops::embedding_cost(N, C, DType::f32);
  if (s.scale_embeddings) c += ops::scale_cost(N * C);
  ops::OpCost layer = ops::rms_norm_cost(N, C, true);
  layer += ops::linear_cost(N, s.qkv_width(), C, DType::f32, s.qkv_bias);
  if (s.qk_norm) layer += ops::rms_norm_heads_cost(N, H + KVH, D);
  layer += ops::rope_cost(N, H + KVH, D);
  layer += ops::linear_cost(N, C, H * D, DType::f32, s.o_bias);
  if (s.sandwich_norms) layer += ops::rms_norm_cost(N, 2 * C, false);  // two norms of [N, C]
  layer += ops::rms_norm_cost(N, C, true);
  layer += ops::linear_cost(N, 2 * I, C, DType::f32, s.mlp_bias);
  layer += ops::silu_gate_cost(N, I);
  layer += ops::linear_cost(N, C, I, DType::f32, s.mlp_bias);
  for (int64_t i = 0; i < s.num_layers; ++i) {
    c += layer;
    // The layer's window (and causality) decide the scores its attention computes.
    ops::CausalAttentionArgs a = decoder_attention_args(s, size_t(i), B, T, Device::cpu());
    a.past = past;
    c += ops::causal_attention_cost(a);
  }
  return c;
}

namespace {

// The host mask's new state, whole, to the device copy the kernel reads.
void upload_cache_mask(KvCache& cache) {
  core::copy_bytes(cache.mask.device(), cache.mask.raw(), Device::cpu(), cache.host_mask.raw(),
                   cache.host_mask.nbytes());
}

// Inference's side of the layer: packed linears on the model's device, and attention over this
// call's keys or, with a cache, over the cache with this call's keys appended.
class InferenceRunner final : public DecoderLayerRunner {
 public:
  InferenceRunner(const DecoderWeights& w, const DecoderPass& pass) : w_(w), pass_(pass) {}

  void linear(size_t l, DecoderLinear site, Tensor& out, const Tensor& in) override {
    const DecoderLayer& L = w_.layers[l];
    switch (site) {
      case DecoderLinear::qkv: ops::linear_forward(out, in, *L.qkv); return;
      case DecoderLinear::o: ops::linear_forward(out, in, *L.o_proj); return;
      case DecoderLinear::gate_up: ops::linear_forward(out, in, *L.gate_up); return;
      case DecoderLinear::down: ops::linear_forward(out, in, *L.down); return;
    }
  }

  void attention(size_t l, ops::CausalAttentionArgs a, DecoderLayerTensors& t) override {
    const int64_t T = a.Tq, HD = a.H * a.D, KD = a.KVH * a.D, QKV = a.ld_q;
    const float* q = t.qkv.data<float>();
    const float* k = q + HD;
    const float* v = q + HD + KD;
    a.mask_stride = pass_.mask_stride;
    if (KvCache* cache = pass_.cache) {
      // Append this call's keys and values: rows [past, past + T) of each sequence. A captured
      // step reads past on the device; the host's value is then only the most it can be.
      ops::KvAppendArgs append;
      append.B = a.B, append.T = T, append.capacity = cache->capacity, append.width = KD, append.ld_qkv = QKV;
      append.k_col = HD, append.v_col = HD + KD, append.device = a.device;
      append.past = pass_.device_past ? cache->capacity - T : cache->length;
      append.device_past = pass_.device_past;
      float* ck = cache->k[l].data<float>();
      float* cv = cache->v[l].data<float>();
      ops::kv_append(ck, cv, q, append);
      k = ck, v = cv;
      a.past = append.past, a.device_past = pass_.device_past;
      a.ld_kv = KD, a.batch_stride_kv = cache->capacity * KD;
    } else {
      a.ld_kv = QKV, a.batch_stride_kv = T * QKV;  // read straight from the fused buffer
    }
    ops::causal_attention_forward(t.context.data<float>(), q, k, v, pass_.key_mask, a);
  }

  const Tensor& norm(size_t l, DecoderNorm which) const override {
    const DecoderLayer& L = w_.layers[l];
    switch (which) {
      case DecoderNorm::attn: return L.attn_norm;
      case DecoderNorm::q: return L.q_norm;
      case DecoderNorm::k: return L.k_norm;
      case DecoderNorm::attn_out: return L.attn_out_norm;
      case DecoderNorm::mlp: return L.mlp_norm;
      case DecoderNorm::mlp_out: return L.mlp_out_norm;
    }
    return L.attn_norm;
  }

 private:
  const DecoderWeights& w_;
  const DecoderPass& pass_;
};

}  // namespace

DecoderLayerTensors inference_scratch(const DecoderConfig& s, int64_t N, const Tensor& h, Device device) {
  auto make = [&](const Shape& shape) { return Tensor::empty(shape, DType::f32, device); };
  const int64_t C = s.hidden_size, I = s.intermediate_size;
  DecoderLayerTensors t;
  t.resid = t.resid_mid = t.resid_out = h;
  t.x1 = t.x2 = make({N, C});
  t.qkv = make({N, s.qkv_width()});
  t.context = make({N, s.num_heads * s.head_dim});
  t.gate_up = make({N, 2 * I});
  t.act = make({N, I});
  t.branch = make({N, C});
  if (s.sandwich_norms) t.attn_out = t.mlp_out = make({N, C});  // the branch before its norm
  return t;
}

void decoder_pass(const DecoderWeights& w, const DecoderConfig& s, int64_t B, int64_t T, const Tensor& device_ids,
                  const DecoderPass& pass, DecoderLayerTensors& t) {
  const Device device = w.final_norm.device();
  Tensor& h = t.resid;
  if (s.embedding_norm) {
    // ModernBERT: h = norm(tok_embeddings[ids]), embedded into the scratch first.
    decoder_embed(t.branch, device_ids, w.embed_tokens, w.embed_scale);
    core::Span span(core::SpanKind::module, "embeddings.norm");
    decoder_norm(s, h, t.branch, Tensor(), w.embed_norm);
  } else {
    decoder_embed(h, device_ids, w.embed_tokens, w.embed_scale);
  }
  InferenceRunner run(w, pass);
  // Each layer's last add norms the stream for the next layer (the final norm after the last);
  // ModernBERT's first attention norm is the identity.
  if (s.first_attn_norm) decoder_norm(s, t.x1, h, Tensor(), w.layers.front().attn_norm);
  else core::copy_bytes(device, t.x1.raw(), device, h.raw(), h.nbytes());
  for (size_t l = 0; l < w.layers.size(); ++l) {
    DecoderLayerEnds ends;
    ends.input_normed = true;
    ends.next_norm = l + 1 < w.layers.size() ? &w.layers[l + 1].attn_norm : &w.final_norm;
    ends.next_x = t.x1;
    decoder_layer_forward(s, l, B, T, *pass.rope, t, run, ends);
  }
}

Tensor decoder_forward(const DecoderWeights& w, const DecoderConfig& s, const Tensor& ids, const Tensor& mask,
                       const Tensor& positions, KvCache* cache) {
  const int64_t B = ids.size(0), T = ids.size(1), N = B * T, C = s.hidden_size;
  const int64_t past = cache ? cache->length : 0;
  check(!cache || past + T <= cache->capacity, "the key/value cache holds " +
                                                   std::to_string(cache ? cache->capacity : 0) + " positions; " +
                                                   std::to_string(past + T) + " are needed");
  // The model's device is where its weights are; ids, mask and positions arrive on the host.
  const Device device = w.final_norm.device();
  const bool on_host = device.kind == DeviceKind::cpu;

  int32_t max_pos = 0;
  for (int64_t i = 0; i < N; ++i) max_pos = std::max(max_pos, positions.data<int32_t>()[i]);
  const DecoderRope rope = decoder_rope(s, positions, int64_t(max_pos) + 1, device);

  // Keys visible to this call: the cache's mask (with this call's tokens appended) or this mask.
  DecoderPass pass;
  pass.rope = &rope;
  pass.cache = cache;
  Tensor call_mask;
  pass.mask_stride = T;
  if (cache) {
    int32_t* cm = cache->host_mask.data<int32_t>();
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(cm + b * cache->capacity + past, mask.data<int32_t>() + b * T, size_t(T) * sizeof(int32_t));
    if (!on_host) upload_cache_mask(*cache);
    pass.key_mask = cache->mask.data<int32_t>();
    pass.mask_stride = cache->capacity;
  } else {
    call_mask = mask.on(device);
    pass.key_mask = call_mask.data<int32_t>();
  }

  core::Span model_span(core::SpanKind::module, "model");
  Tensor h = Tensor::empty({N, C}, DType::f32, device);
  DecoderLayerTensors t = inference_scratch(s, N, h, device);
  decoder_pass(w, s, B, T, ids.on(device), pass, t);
  if (cache) cache->length += T;
  return t.x1.reshape({B, T, C});
}

}  // namespace tach::model
