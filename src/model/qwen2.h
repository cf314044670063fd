// The Qwen2 decoder: token embeddings, pre-RMSNorm layers with rotary grouped-query attention
// (q/k/v with bias, o without) and a SiLU-gated MLP, a final RMSNorm; heads for sequence
// classification (`score`, pooled at the last non-pad token) and causal LM (`lm_head`, or the
// tied embeddings).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "model/config.h"
#include "model/weight_binder.h"
#include "ops/linear.h"
#include "ops/op_cost.h"
#include "ops/rope.h"
#include "tach/model.h"
#include "tach/tensor.h"

namespace tach::model {

struct Qwen2Shape {
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  int64_t max_positions = 0;
  float eps = 1e-6f;
  ops::RopeSettings rope;
  int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }  // fused q|k|v columns
};

struct Qwen2Layer {
  Tensor input_norm, post_attention_norm;        // [C] f32
  std::unique_ptr<ops::Linear> qkv;        // [(H + 2 KVH) D, C] with bias: q, k, v in one GEMM
  std::unique_ptr<ops::Linear> o_proj;     // [C, H D], no bias
  std::unique_ptr<ops::Linear> gate_up;    // [2I, C]: gate and up in one GEMM
  std::unique_ptr<ops::Linear> down;       // [C, I]
};

struct Qwen2Weights {
  Tensor embed_tokens;  // [V, C] as stored (f32, f16 or bf16; mapped, not copied)
  std::vector<Qwen2Layer> layers;
  Tensor final_norm;    // [C] f32
  std::unique_ptr<ops::Linear> score;    // [labels, C], no bias; null without the head
  Tensor lm_head_weight;                       // [V, C] as stored: lm_head.weight, or embed_tokens when tied
};

// Keys and values of every layer for a batch, for decoding one token at a time, on the model's
// device. k[l], v[l]: [B, capacity, KVH*D] f32; mask: [B, capacity] i32 (1 = a real token).
// host_mask is where the mask is written (each call appends its columns); on a GPU the whole
// mask is then copied to `mask` (B*capacity ints), on the CPU both are one tensor.
struct KvCache {
  std::vector<Tensor> k, v;
  Tensor mask, host_mask;
  int64_t capacity = 0, length = 0;
};
KvCache make_kv_cache(const Qwen2Shape& s, int64_t batch, int64_t capacity, Device device = Device::cpu());

Qwen2Shape qwen2_shape(const Qwen2Config& c);
Qwen2Weights build_qwen2(const Qwen2Config& c, WeightBinder& w, const ops::LinearPlacement& place);

// ids: [B, T] i32  mask: [B, T] i32  positions: [B, T] i32, all on the host (checked there; a GPU
// model copies them)
// Without a cache every query sees the keys at or before it in this call; with one, the new
// keys and values are appended (cache->length grows by T) and queries see the whole cache.
// Returns the final-normed hidden states [B, T, C] f32 on the model's device.
Tensor qwen2_forward(const Qwen2Weights& w, const Qwen2Shape& s, const Tensor& ids, const Tensor& mask,
                     const Tensor& positions, KvCache* cache);
ops::OpCost qwen2_cost(const Qwen2Shape& s, int64_t B, int64_t T, int64_t past);

}  // namespace tach::model
