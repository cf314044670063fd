// The post-LayerNorm transformer encoder that BERT, DistilBERT, RoBERTa, XLM-RoBERTa and MPNet
// share. The families differ in tensor names, token types, position ids, MPNet's relative position
// bias and classification heads, which their rows say (model/family.h), not here.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/linear.h"
#include "ops/op_cost.h"
#include "tach/model.h"
#include "tach/tensor.h"

namespace tach::model {

// A = the layer's heads x head_dim: C, or less where heads were pruned.
struct EncoderLayer {
  std::unique_ptr<ops::Linear> qkv;       // [3A, C]: q, k, v fused into one GEMM
  std::unique_ptr<ops::Linear> attn_out;  // [C, A]
  Tensor ln1_gamma, ln1_beta;             // [C] f32, after attention
  std::unique_ptr<ops::Linear> ffn_in;    // [I, C], activation fused
  std::unique_ptr<ops::Linear> ffn_out;   // [C, I]
  Tensor ln2_gamma, ln2_beta;             // [C] f32, after the FFN
};

struct EncoderWeights {
  Tensor word_embeddings;            // [V, C] as stored (f32/f16/bf16)
  Tensor position_embeddings;        // [P, C]
  Tensor token_type_embeddings;      // [Tt, C] or undefined
  Tensor emb_ln_gamma, emb_ln_beta;  // [C] f32
  Tensor relative_bias;              // [buckets, H] f32 (MPNet) or undefined
  std::vector<EncoderLayer> layers;
  // The residual stream's and every layer buffer's dtype (model/activation_dtype.h): bf16 or f16
  // on a GPU for a bf16 or f16 model, else f32. The forward's output is f32 whatever it is.
  DType activations = DType::f32;
};

struct EncoderShape {
  int64_t layers = 0, hidden = 0, heads = 0, intermediate = 0, vocab = 0, max_positions = 0, type_vocab = 0;
  // Heads each layer keeps after pruning (config.json's pruned_heads); empty: `heads` in every
  // layer. A layer's attention is heads_in(l) * head_dim() wide; head_dim stays hidden / heads.
  std::vector<int64_t> layer_heads;
  int64_t heads_in(size_t layer) const { return layer_heads.empty() ? heads : layer_heads[layer]; }
  int64_t head_dim() const { return hidden / heads; }
  float eps = 1e-12f;
  std::string module = "bert", layer_prefix = "encoder.layer.";  // module paths in traces
  // RoBERTa's padding_idx: position ids count the non-pad tokens after it (pads sit at it); -1:
  // positions 0..T-1.
  int32_t position_pad = -1;
  // The positions a row of T tokens needs (RoBERTa's start after padding_idx).
  int64_t positions_needed(int64_t T) const { return position_pad < 0 ? T : T + position_pad + 1; }
  // MPNet's relative position bias: the bucketing's buckets and max distance; 0: none.
  int64_t relative_buckets = 0, relative_max_distance = 0;
  // The dtypes the costs count bytes at: the linears' weights (the compute dtype), the embedding
  // tables (as stored) and the activations (EncoderWeights::activations). Set when the model is
  // built; f32 for a shape read from a config alone.
  DType compute = DType::f32, embeddings = DType::f32, activations = DType::f32;
};

// Position ids for a batch of ids [B, T] (i32, on the host): [B, T] i32 on the host.
Tensor encoder_position_ids(const Tensor& ids, const EncoderShape& shape);

// Checks the batch against the model (ids in range, length within positions, type ids) and
// says which row and position is wrong when it is not.
void check_batch(const TokenBatch& batch, const EncoderShape& shape);

// What encoder_forward returns: every token's hidden state, or each row's first token only (what a
// classification head reads): encoder_forward_rows with rows {0} in every sequence.
enum class EncoderOutput { every_token, first_token };

// The positions of each sequence a caller reads: rows[b] in [0, T), in the order wanted (a
// sequence may have none; a position may repeat). fill-mask's are the mask tokens.
using SequenceRows = std::vector<std::vector<int64_t>>;
// An error unless rows has one entry per sequence, each position inside the sequence.
void check_rows(const SequenceRows& rows, int64_t B, int64_t T);
// The rows in all.
int64_t rows_in_all(const SequenceRows& rows);

// batch → hidden: [B, T, C] f32 (every_token) or [B, C] (first_token). Adds the ops' declared
// costs to `cost` when given.
Tensor encoder_forward(const EncoderWeights& w, const EncoderShape& shape, const TokenBatch& batch, ops::OpCost* cost,
                       EncoderOutput output = EncoderOutput::every_token);
// batch → the final hidden states at `rows` alone: [R, C] f32, R = rows_in_all(rows), sequence
// 0's rows first. The last layer computes keys and values for every token (each row attends to
// all of them) but runs its queries, attention output, LayerNorms and FFN for the R rows only:
// the same values as encoder_forward's rows, with (T - R/B) / T of the last layer's row work less.
Tensor encoder_forward_rows(const EncoderWeights& w, const EncoderShape& shape, const TokenBatch& batch,
                            const SequenceRows& rows, ops::OpCost* cost);
ops::OpCost encoder_cost(const EncoderShape& shape, int64_t B, int64_t T,
                         EncoderOutput output = EncoderOutput::every_token);
// encoder_forward_rows's work: the last layer's queries and everything after them for R rows.
ops::OpCost encoder_rows_cost(const EncoderShape& shape, int64_t B, int64_t T, int64_t R);

}  // namespace tach::model
