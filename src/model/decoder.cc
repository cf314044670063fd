#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/allocator.h"
#include "core/trace.h"

#include "model/activation_dtype.h"
#include "model/decoder_layer.h"
#include "model/encoder_build.h"
#include "ops/cast.h"
#include "ops/causal_attention.h"
#include "ops/copy_rows.h"
#include "ops/add.h"
#include "ops/embedding.h"
#include "ops/kv_append.h"
#include "ops/rope_kv_append.h"
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

DecoderWeights build_decoder(const DecoderConfig& c, const DecoderTensorNames& n, const HeadTensorNames& heads,
                             WeightBinder& w, const ops::LinearPlacement& place, HeadSource& s) {
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
  if (!m.layers.empty()) m.activations = inference_activations(*m.layers.front().qkv);
  m.final_norm = take_norm(w, n.final_norm, C, c, place.device);
  const Head head = c.classification_head ? Head::sequence_classification : c.head;
  auto take = [&](const std::string& name, const Shape& shape, HeadInit init) {
    return take_head_tensor(w, s, name, shape, false, init);
  };
  if (head != Head::none && c.head_mlp) {  // ModernBERT: head.dense (GELU fused), head.norm, then the head's own
    m.head_dense = pack_linear(take(n.head_dense + ".weight", {C, C}, HeadInit::normal),
                               c.head_dense_bias ? take(n.head_dense + ".bias", {C}, HeadInit::zeros) : Tensor(), place,
                               cpu::FusedActivation::gelu_erf);
    m.head_norm = applied_norm(to_f32_param(take(n.head_norm + ".weight", {C}, HeadInit::ones), Device::cpu()), c)
                      .on(place.device);
  }
  if (head == Head::sequence_classification) {
    const std::string score = c.head_mlp ? "classifier" : "score";
    m.score =
        pack_linear(take(score + ".weight", {c.num_labels(), C}, HeadInit::normal),
                    c.classifier_bias ? take(score + ".bias", {c.num_labels()}, HeadInit::zeros) : Tensor(), place);
  } else if (head == Head::token_classification || head == Head::question_answering) {
    const std::string& name = head == Head::question_answering ? heads.qa_outputs : heads.token_classifier;
    const int64_t outputs = head == Head::question_answering ? 2 : c.num_labels();
    m.per_token = pack_linear(take(name + ".weight", {outputs, C}, HeadInit::normal),
                              take(name + ".bias", {outputs}, HeadInit::zeros), place);
  } else if (head == Head::masked_lm) {
    Tensor weight =
        c.mlm_tied ? m.embed_tokens : take(heads.mlm_decoder + ".weight", {c.vocab_size, C}, HeadInit::normal);
    Tensor bias = c.decoder_bias ? take(heads.mlm_decoder + ".bias", {c.vocab_size}, HeadInit::zeros) : Tensor();
    m.per_token = pack_linear(weight, bias, place);
  }
  const bool per_token_head = head == Head::token_classification || head == Head::question_answering;
  if (per_token_head) return m;  // no LM head beside a per-token one, tied or not
  if (c.tie_word_embeddings) m.lm_head_weight = m.embed_tokens;
  else if (c.causal_lm) m.lm_head_weight = w.take_head("lm_head.weight", {c.vocab_size, C});
  return m;
}

KvCache make_kv_cache(const DecoderConfig& s, int64_t batch, int64_t capacity, Device device, DType dtype) {
  KvCache c;
  c.capacity = capacity;
  const int64_t KD = s.num_kv_heads * s.head_dim;
  for (int64_t l = 0; l < s.num_layers; ++l) {
    c.k.push_back(Tensor::empty({batch, capacity, KD}, dtype, device, MemoryCategory::activations));
    c.v.push_back(Tensor::empty({batch, capacity, KD}, dtype, device, MemoryCategory::activations));
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

ForwardDtypes forward_dtypes(const DecoderWeights& w, DType compute) {
  return {compute, w.embed_tokens.dtype(), w.activations};
}

int64_t kv_cache_bytes(const DecoderConfig& c, int64_t B, int64_t length, DType dtype) {
  return 2 * c.num_layers * int64_t(dtype_bytes(dtype, size_t(B * length * c.num_kv_heads * c.head_dim)));
}

ops::OpCost decoder_cost(const DecoderConfig& s, int64_t B, int64_t T, int64_t past, bool head_rows,
                         const ForwardDtypes& dtypes) {
  const int64_t N = B * T, C = s.hidden_size, I = s.intermediate_size, D = s.head_dim;
  const int64_t H = s.num_heads, KVH = s.num_kv_heads;
  const DType w = dtypes.weights, act = dtypes.activations;
  ops::OpCost c = ops::embedding_cost(N, C, dtypes.embeddings, act);
  if (s.scale_embeddings) c += ops::scale_cost(N * C, act);
  // A layer's norm in, q|k|v, the q/k norms and RoPE: every row, in every layer.
  ops::OpCost front = ops::rms_norm_cost(N, C, true, act);
  front += ops::linear_cost(N, s.qkv_width(), C, w, s.qkv_bias, act);
  if (s.qk_norm) front += ops::rms_norm_heads_cost(N, H + KVH, D, act);
  front += ops::rope_cost(N, H + KVH, D, act);
  // After the attention, over `rows` rows: o, the norms, the MLP.
  const auto back = [&](int64_t rows) {
    ops::OpCost b = ops::linear_cost(rows, C, H * D, w, s.o_bias, act);
    if (s.sandwich_norms) b += ops::rms_norm_cost(rows, 2 * C, false, act);  // two norms of [rows, C]
    b += ops::rms_norm_cost(rows, C, true, act);
    b += ops::linear_cost(rows, 2 * I, C, w, s.mlp_bias, act);
    b += ops::silu_gate_cost(rows, I, act);
    b += ops::linear_cost(rows, C, I, w, s.mlp_bias, act);
    return b;
  };
  const ops::OpCost every_row = back(N);
  for (int64_t i = 0; i < s.num_layers; ++i) {
    const bool last_for_heads = head_rows && i + 1 == s.num_layers;
    c += front;
    // The layer's window (and causality) decide the scores its attention computes.
    ops::CausalAttentionArgs a = decoder_attention_args(s, size_t(i), B, last_for_heads ? 1 : T, Device::cpu());
    a.past = last_for_heads ? past + T - 1 : past;
    a.dtype = act;
    c += ops::causal_attention_cost(a);
    if (!last_for_heads) {
      c += every_row;
      continue;
    }
    c += ops::copy_rows_cost(B, H * D, act);  // the head rows' queries, gathered
    c += ops::copy_rows_cost(B, C, act);      // and their residual stream
    c += back(B);
  }
  if (act != DType::f32) c += ops::cast_cost((head_rows ? B : N) * C, act, DType::f32);  // the output, to f32
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
  InferenceRunner(const DecoderWeights& w, const DecoderConfig& c, const DecoderPass& pass)
      : w_(w), config_(&c), pass_(pass) {}

  void linear(size_t l, DecoderLinear site, Tensor& out, const Tensor& in) override {
    const DecoderLayer& L = w_.layers[l];
    switch (site) {
      case DecoderLinear::qkv: ops::linear_forward(out, in, *L.qkv); return;
      case DecoderLinear::o: ops::linear_forward(out, in, *L.o_proj); return;
      case DecoderLinear::gate_up: ops::linear_forward(out, in, *L.gate_up); return;
      case DecoderLinear::down: ops::linear_forward(out, in, *L.down); return;
    }
  }

  // Decoding's few rows: the down GEMV forms act(gate) · up as it loads gate|up (no gate kernel,
  // no act round trip); otherwise the gate op into t.act, then down.
  void gated_down(size_t l, ops::GateActivation act, Tensor& out, DecoderLayerTensors& t) override {
    ops::linear_forward_gated(out, t.gate_up, *w_.layers[l].down, act, &t.act);
  }

  // q|k|v, the context and the cache are all in the activations' dtype (t.qkv's).
  void attention(size_t l, ops::CausalAttentionArgs a, DecoderLayerTensors& t) override {
    const Keys keys = keys_of_call(l, a.B, a.Tq, t);
    a.past = keys.past, a.device_past = pass_.device_past;
    a.ld_kv = keys.ld, a.batch_stride_kv = keys.batch_stride, a.mask_stride = pass_.mask_stride;
    a.facts = {w_.layers[l].qkv->compute_dtype(), pass_.key_padding};
    a.dtype = t.qkv.dtype();
    ops::causal_attention_forward(t.context.raw(), t.qkv.raw(), keys.k, keys.v, pass_.key_mask, a);
  }

  // Where this call's queries find their keys and values: in the fused q|k|v buffer, or (with a
  // cache) in the cache, after this call's T rows per sequence are appended at [past, past + T).
  // Pointers to elements of the activations' dtype; ld and batch_stride count elements.
  struct Keys {
    const void* k;
    const void* v;
    int64_t ld, batch_stride, past;
  };
  Keys keys_of_call(size_t l, int64_t B, int64_t T, const DecoderLayerTensors& t) const {
    const DecoderConfig& c = *config_;
    const int64_t HD = c.num_heads * c.head_dim, KD = c.num_kv_heads * c.head_dim, QKV = c.qkv_width();
    const DType dtype = t.qkv.dtype();
    const auto column = [&](int64_t col) { return static_cast<const char*>(t.qkv.raw()) + dtype_bytes(dtype, col); };
    KvCache* cache = pass_.cache;
    if (cache == nullptr) return {column(HD), column(HD + KD), QKV, T * QKV, 0};  // straight from the fused buffer
    check(cache->k[l].dtype() == dtype, "the key/value cache is " + std::string(dtype_name(cache->k[l].dtype())) +
                                            ", the activations " + std::string(dtype_name(dtype)));
    // A captured step reads past on the device; the host's value is then only the most it can be.
    ops::KvAppendArgs append;
    append.B = B, append.T = T, append.capacity = cache->capacity, append.width = KD, append.ld_qkv = QKV;
    append.k_col = HD, append.v_col = HD + KD, append.device = t.qkv.device();
    append.past = pass_.device_past ? cache->capacity - T : cache->length;
    append.device_past = pass_.device_past;
    append.dtype = dtype;
    void* ck = cache->k[l].raw();
    void* cv = cache->v[l].raw();
    if (rope_in_attention())  // RoPE on q and k in the same kernel (decoder_qkv left it)
      ops::rope_kv_append(t.qkv.raw(), ck, cv, append, c.num_heads, c.head_dim, pass_.rope->of(c, l));
    else ops::kv_append(ck, cv, t.qkv.raw(), append);
    return {ck, cv, KD, cache->capacity * KD, append.past};
  }

  // With a cache on a GPU, where the fused kernel runs (the CPU's would be the two ops anyway).
  bool rope_in_attention() const override {
    return pass_.cache != nullptr && pass_.cache->mask.device().kind == DeviceKind::cuda;
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
  const DecoderConfig* config_;
  const DecoderPass& pass_;
};

}  // namespace

DecoderLayerTensors inference_scratch(const DecoderConfig& s, int64_t N, const Tensor& h, Device device) {
  auto make = [&](const Shape& shape) { return Tensor::empty(shape, h.dtype(), device); };
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

namespace {

// The last layer for the head rows: q|k|v (with its norms and RoPE) for every row, then the head
// rows' queries against their keys, and o, the MLP and the final norm for those B rows only.
void last_layer_for_head_rows(const DecoderWeights& w, const DecoderConfig& s, size_t l, int64_t B, int64_t T,
                              const DecoderPass& pass, DecoderLayerTensors& t, InferenceRunner& run) {
  const Device device = t.qkv.device();
  const std::vector<int64_t>& at = *pass.head_rows;
  const int64_t C = s.hidden_size, HD = s.num_heads * s.head_dim, QKV = s.qkv_width();
  core::Span layer_span(core::SpanKind::module, core::tracing() ? core::concat("layers.", l) : std::string());
  Tensor resid = Tensor::empty({B, C}, DType::f32, device);
  DecoderLayerTensors r = inference_scratch(s, B, resid, device);
  {
    core::Span span(core::SpanKind::module, "self_attn");
    decoder_qkv(s, l, B, T, *pass.rope, t, run);
    Tensor q = Tensor::empty({B, HD}, DType::f32, device);  // [B, H D] the head rows' queries
    for (int64_t b = 0; b < B; ++b) {
      const int64_t row = b * T + at[size_t(b)];
      ops::copy_rows(device, q.data<float>() + b * HD, HD, t.qkv.data<float>() + row * QKV, QKV, 1, HD);
      ops::copy_rows(device, resid.data<float>() + b * C, C, t.resid.data<float>() + row * C, C, 1, C);
    }
    // One query per sequence. Causal: at key index past + at[b], so that it sees the keys at or
    // before it (within the layer's window); one call when every row's index is the same (no
    // padding, or left padding), else a call per row. Bidirectional (a global layer: nothing
    // depends on the query's index but which keys exist): at the last index, so that it sees all T.
    const InferenceRunner::Keys keys = run.keys_of_call(l, B, T, t);
    ops::CausalAttentionArgs a = decoder_attention_args(s, l, B, 1, device);
    a.ld_q = HD, a.ld_kv = keys.ld, a.batch_stride_kv = keys.batch_stride, a.mask_stride = pass.mask_stride;
    const bool same_row = !s.causal || std::all_of(at.begin(), at.end(), [&](int64_t i) { return i == at.front(); });
    const int64_t calls = same_row ? 1 : B;
    if (!same_row) a.B = 1;
    for (int64_t b = 0; b < calls; ++b) {
      a.past = keys.past + (s.causal ? at[size_t(b)] : T - 1);
      const int64_t kv_offset = b * keys.batch_stride;
      // The CPU's f32 activations (head_rows_supported: this path runs on the CPU only).
      ops::causal_attention_forward(
          r.context.data<float>() + b * HD, q.data<float>() + b * HD, static_cast<const float*>(keys.k) + kv_offset,
          static_cast<const float*>(keys.v) + kv_offset, pass.key_mask + b * pass.mask_stride, a);
    }
    decoder_attention_output(s, l, r, run);
  }
  DecoderLayerEnds ends;
  ends.next_norm = &w.final_norm;
  ends.next_x = pass.head_out;
  decoder_mlp_block(s, l, r, run, ends);
}

}  // namespace

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
  InferenceRunner run(w, s, pass);
  // Each layer's last add norms the stream for the next layer (the final norm after the last);
  // ModernBERT's first attention norm is the identity.
  if (s.first_attn_norm) decoder_norm(s, t.x1, h, Tensor(), w.layers.front().attn_norm);
  else core::copy_bytes(device, t.x1.raw(), device, h.raw(), h.nbytes());
  for (size_t l = 0; l < w.layers.size(); ++l) {
    if (pass.head_rows != nullptr && l + 1 == w.layers.size())
      return last_layer_for_head_rows(w, s, l, B, T, pass, t, run);
    DecoderLayerEnds ends;
    ends.input_normed = true;
    ends.next_norm = l + 1 < w.layers.size() ? &w.layers[l + 1].attn_norm : &w.final_norm;
    ends.next_x = t.x1;
    decoder_layer_forward(s, l, B, T, *pass.rope, t, run, ends);
  }
}

namespace {

// decoder_forward's pass, for every row (head_rows null) or for a head's rows.
Tensor forward_pass(const DecoderWeights& w, const DecoderConfig& s, const Tensor& ids, const Tensor& mask,
                    const Tensor& positions, KvCache* cache, const std::vector<int64_t>* head_rows) {
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
  pass.key_padding = ops::key_padding_of(mask.data<int32_t>(), B, T, T);
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
  if (head_rows) {
    pass.head_rows = head_rows;
    pass.head_out = Tensor::empty({B, C}, w.activations, device);
  }

  core::Span model_span(core::SpanKind::module, "model");
  Tensor h = Tensor::empty({N, C}, w.activations, device);
  DecoderLayerTensors t = inference_scratch(s, N, h, device);
  decoder_pass(w, s, B, T, ids.on(device), pass, t);
  if (cache) cache->length += T;
  return as_f32(head_rows ? pass.head_out : t.x1.reshape({B, T, C}));
}

}  // namespace

Tensor decoder_forward(const DecoderWeights& w, const DecoderConfig& s, const Tensor& ids, const Tensor& mask,
                       const Tensor& positions, KvCache* cache) {
  return forward_pass(w, s, ids, mask, positions, cache, nullptr);
}

bool head_rows_supported(const DecoderConfig& c, Device device) {
  return device.kind == DeviceKind::cpu && (c.causal || c.layer_window.back() == 0);
}

Tensor decoder_forward_head_rows(const DecoderWeights& w, const DecoderConfig& s, const Tensor& ids, const Tensor& mask,
                                 const Tensor& positions, const std::vector<int64_t>& head_rows, KvCache* cache) {
  const int64_t B = ids.size(0), T = ids.size(1);
  check(head_rows_supported(s, w.final_norm.device()),
        "decoder_forward_head_rows: only causal families on the CPU compute the head rows alone");
  check(int64_t(head_rows.size()) == B, "decoder_forward_head_rows: " + std::to_string(head_rows.size()) +
                                            " head rows for a batch of " + std::to_string(B));
  for (int64_t r : head_rows)
    check(r >= 0 && r < T,
          "decoder_forward_head_rows: head row " + std::to_string(r) + " outside the " + std::to_string(T) + " tokens");
  return forward_pass(w, s, ids, mask, positions, cache, &head_rows);
}

}  // namespace tach::model
