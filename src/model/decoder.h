// The pre-norm decoder every decoder family runs on (Qwen2, Llama, Mistral, Qwen3, Gemma 3), and
// ModernBERT's bidirectional stack of the same layers: token embeddings, RMSNorm (ModernBERT:
// LayerNorm) layers with rotary grouped-query attention and a gated MLP, a final norm; heads for
// sequence classification (`score`, pooled at the last non-pad token; ModernBERT's pooled head and
// classifier) and causal LM (`lm_head`, or the tied embeddings). Where the families differ, DecoderConfig's
// switches say (model/decoder_config.h); the tensor names come from the family's row.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "model/activation_dtype.h"
#include "model/decoder_config.h"
#include "model/decoder_layer.h"
#include "model/encoder_heads.h"
#include "model/family.h"
#include "model/weight_binder.h"
#include "ops/linear.h"
#include "ops/op_cost.h"
#include "ops/rope.h"
#include "tach/model.h"
#include "tach/tensor.h"

namespace tach::model {

struct DecoderLayer {
  Tensor attn_norm, mlp_norm;            // [C] f32, as applied (Gemma's 1 + w already added); ModernBERT's
                                         // layer 0 has no attn_norm (the identity)
  Tensor attn_out_norm, mlp_out_norm;    // [C] Gemma's norms on the branch outputs; undefined elsewhere
  Tensor q_norm, k_norm;                 // [D] per-head q/k norms (Qwen3, Gemma 3); undefined elsewhere
  std::unique_ptr<ops::Linear> qkv;      // [(H + 2 KVH) D, C] (bias where the family has one): q, k, v in one GEMM
  std::unique_ptr<ops::Linear> o_proj;   // [C, H D]
  std::unique_ptr<ops::Linear> gate_up;  // [2I, C]: gate and up in one GEMM
  std::unique_ptr<ops::Linear> down;     // [C, I]
};

struct DecoderWeights {
  Tensor embed_tokens;    // [V, C] as stored (f32, f16 or bf16; mapped, not copied)
  float embed_scale = 0;  // Gemma: sqrt(C) rounded to the compute dtype; 0 = none
  Tensor embed_norm;      // [C] f32: ModernBERT's embeddings.norm; undefined elsewhere
  std::vector<DecoderLayer> layers;
  Tensor final_norm;                        // [C] f32
  std::unique_ptr<ops::Linear> head_dense;  // ModernBERT's head.dense [C, C] (GELU fused); null elsewhere
  Tensor head_norm;                         // [C] f32: ModernBERT's head.norm
  std::unique_ptr<ops::Linear> score;       // [labels, C] (a bias where classifier_bias); null without the head
  // ModernBERT's per-token heads after head.dense/head.norm: the token classifier [labels, C],
  // question answering's [2, C] (start, end), or the masked LM's decoder [V, C] (the embeddings
  // where tied); null without one.
  std::unique_ptr<ops::Linear> per_token;
  Tensor lm_head_weight;  // [V, C] as stored: lm_head.weight, or embed_tokens when tied
  // The residual stream's, the layers' buffers' and the key/value cache's dtype
  // (model/activation_dtype.h): bf16 or f16 on a GPU for a bf16 or f16 model, else f32.
  DType activations = DType::f32;
};

// A norm weight as the forward applies it: Gemma's (1 + w), else w. [C] f32.
Tensor applied_norm(const Tensor& stored_f32, const DecoderConfig& c);
// The embedding scale Gemma applies: sqrt(hidden) rounded to the dtype the model runs in
// (transformers multiplies by torch.tensor(sqrt(C)).to(weight.dtype), the weights as loaded: f32
// for tach's f32 compute, bf16 for its bf16 compute); 0 for the other families.
float embedding_scale(const DecoderConfig& c, DType compute);

// Keys and values of every layer for a batch, for decoding one token at a time, on the model's
// device. k[l], v[l]: [B, capacity, KVH*D] in `dtype` (the model's activations: f32, or bf16/f16 on a
// GPU); mask: [B, capacity] i32 (1 = a real token).
// host_mask is where the mask is written (each call appends its columns); on a GPU the whole
// mask is then copied to `mask` (B*capacity ints), on the CPU both are one tensor.
struct KvCache {
  std::vector<Tensor> k, v;
  Tensor mask, host_mask;
  int64_t capacity = 0, length = 0;
};
KvCache make_kv_cache(const DecoderConfig& c, int64_t batch, int64_t capacity, Device device = Device::cpu(),
                      DType dtype = DType::f32);

// Binds and packs the body and the head c.head (names from the row: the body's, and ModernBERT's
// per-token heads'), from `source` (model/encoder_heads.h: a head the checkpoint lacks is made new).
DecoderWeights build_decoder(const DecoderConfig& c, const DecoderTensorNames& names, const HeadTensorNames& heads,
                             WeightBinder& w, const ops::LinearPlacement& place, HeadSource& source);

// ids: [B, T] i32  mask: [B, T] i32  positions: [B, T] i32, all on the host (checked there; a GPU
// model copies them)
// Without a cache every query sees the keys at or before it in this call; with one, the new
// keys and values are appended (cache->length grows by T) and queries see the whole cache.
// Returns the final-normed hidden states [B, T, C] f32 on the model's device (cast from the
// activations' dtype where they are 16-bit).
Tensor decoder_forward(const DecoderWeights& w, const DecoderConfig& c, const Tensor& ids, const Tensor& mask,
                       const Tensor& positions, KvCache* cache);
// The same pass for a head that reads one row per sequence: head_rows[b] in
// [0, T) (the last real token, or the pooled one). The last layer computes q|k|v for every row
// (that row attends to all the keys before it, and a cache keeps them all), and everything after
// for the B head rows only. Returns their final-normed hidden states [B, C] f32 on the model's device.
Tensor decoder_forward_head_rows(const DecoderWeights& w, const DecoderConfig& c, const Tensor& ids, const Tensor& mask,
                                 const Tensor& positions, const std::vector<int64_t>& head_rows,
                                 KvCache* cache = nullptr);
// Whether decoder_forward_head_rows serves this model: on the CPU, a causal family, or ModernBERT
// when its last layer is a global one (a local layer's window is placed by the query's index,
// which the one-query call does not keep). On CUDA the path has not run on a GPU yet, so a GPU
// model runs every row.
bool head_rows_supported(const DecoderConfig& c, Device device);
// What one pass through the layers reads besides the weights and the ids.
struct DecoderPass {
  const DecoderRope* rope = nullptr;  // the call's positions' tables, on the device
  const int32_t* key_mask = nullptr;  // [B, mask_stride] i32 on the device: 1 = a real key
  int64_t mask_stride = 0;
  // Where this call's padding sits (seen on the host): the GPU's attention takes cuDNN's fused
  // kernel for a prefill without left padding only (ops/infer_attention_kernel.h).
  ops::KeyPadding key_padding = ops::KeyPadding::unknown;
  KvCache* cache = nullptr;              // null: attention over this call's keys only
  const int32_t* device_past = nullptr;  // a captured decoding step: the cache length, read on the device
  // Each sequence's one row a head reads, or null: every row. With them, the last layer runs past
  // q|k|v for those rows only, and the final-normed rows end in head_out [B, C] (t.x1 does not
  // hold the final states then).
  const std::vector<int64_t>* head_rows = nullptr;
  Tensor head_out;
};
// The scratch of a pass over N rows, around the residual stream h [N, C] (updated in place;
// x1 serves as both norms' output, each read before the next is written), in h's dtype.
DecoderLayerTensors inference_scratch(const DecoderConfig& c, int64_t N, const Tensor& h, Device device);
// Embeds device_ids [B, T] i32 (on the model's device) into t.resid and runs every layer: the
// final-normed hidden states end in t.x1 [B T, C]. Queues device work only (no copy to or from
// the host), so that a decoding step can be captured as a graph. Leaves cache->length as it was.
void decoder_pass(const DecoderWeights& w, const DecoderConfig& c, int64_t B, int64_t T, const Tensor& device_ids,
                  const DecoderPass& pass, DecoderLayerTensors& t);

// head_rows: the last layer as decoder_forward_head_rows runs it (every row's q|k|v, then B rows;
// each head row costed as the last one, its attention over all T keys).
// dtypes: what the bytes are counted at (the default: an f32 model's).
ops::OpCost decoder_cost(const DecoderConfig& c, int64_t B, int64_t T, int64_t past, bool head_rows = false,
                         const ForwardDtypes& dtypes = {});
// The dtypes a model's forward runs at, for decoder_cost.
ForwardDtypes forward_dtypes(const DecoderWeights& w, DType compute);
// The weight bytes one token's pass through the body reads: every layer's linears as placed
// (packed, in the compute dtype) and every norm vector; the embedding row and the head apart.
int64_t body_weight_bytes(const DecoderWeights& w);
// The key/value cache bytes one decode step reads at cache length `length`: [B, length, KVH*D]
// in the cache's dtype, keys and values, every layer.
int64_t kv_cache_bytes(const DecoderConfig& c, int64_t B, int64_t length, DType dtype = DType::f32);

}  // namespace tach::model
