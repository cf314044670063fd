// Embedding lookup: out[n, :] (+)= table[ids[n], :].
#pragma once

#include <initializer_list>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// ids: [N] i32 (any shape, flattened)  table: [V, C] f32|f16|bf16  out: [N, C] in the
// activation dtype A: f32, or on CUDA also bf16 or f16 (the table keeps its own dtype; each row
// is read as f32 and the result rounded once to A).
// accumulate=false overwrites out, true adds to it (position and token-type embeddings add
// onto the word embeddings): in bf16/f16 out = round(out + row) per call, one rounding per add,
// as transformers' bf16 model adds its bf16 embeddings one at a time. Every id is checked
// against V first (ids on the CPU); an id outside the table is an error naming its index and
// value. Saves nothing for the backward (ids are the input).
void embedding_forward(Tensor& out, const Tensor& ids, const Tensor& table, bool accumulate);
OpCost embedding_cost(int64_t N, int64_t C, DType table_dtype, DType out_dtype = DType::f32);

// Training: a sum of lookups as one op "embedding" (BERT's word + position (+ token type)
// embeddings), each table an f32 master [V, C] read at its own ids [N] i32.
// out: [N, C] f32 = Σ table[ids[n], :]. Every id is checked against its table (ids on the CPU;
// the models check device ids on the host before copying them). Saves nothing: the ids are the input.
struct EmbeddingLookup {
  const Tensor& ids;    // [N] i32
  const Tensor& table;  // [V, C] f32
};
void embedding_forward_train(const Tensor& out, std::initializer_list<EmbeddingLookup> lookups);
// Its backward, "embedding_backward": each table's gradient gets the rows of dout at its ids (a
// scatter-add); a table's gradient undefined (frozen) is skipped, and rows whose id is
// padding_idx get nothing, as nn.Embedding(padding_idx=...) (-1: none).
// dout: [N, C] f32  dtable: [V, C] f32 +=
struct EmbeddingGrad {
  const Tensor& dtable;  // [V, C] f32, or undefined
  const Tensor& ids;     // [N] i32
  int32_t padding_idx;
};
void embedding_backward(const Tensor& dout, std::initializer_list<EmbeddingGrad> grads);

// Kernel. ids: [N]  table: [V, C] (dtype table_dtype)  out: [N, C]
void embedding_forward_cpu(float* out, const int32_t* ids, const void* table, DType table_dtype, int64_t N, int64_t C,
                           bool accumulate);

// Backward: a scatter-add. dout: [N, C]  dtable: [V, C] f32 +=, row ids[n] gets dout[n].
// Rows whose id is padding_idx get nothing, as nn.Embedding(padding_idx=...) (BERT and
// DistilBERT build their word embeddings so); pass -1 for none.
void embedding_backward_cpu(float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C,
                            int32_t padding_idx);
OpCost embedding_backward_cost(int64_t N, int64_t C);

// CUDA kernel. ids must have been checked against V on the host (model::check_batch does): an id
// outside [0, V) gives a zero row rather than a read outside the table. out: [N, C] in out_dtype
// (f32, bf16, f16); the float* form is out_dtype f32.
void embedding_forward_cuda(int device, void* out, DType out_dtype, const int32_t* ids, const void* table,
                            DType table_dtype, int64_t N, int64_t C, int64_t V, bool accumulate);
void embedding_forward_cuda(int device, float* out, const int32_t* ids, const void* table, DType table_dtype, int64_t N,
                            int64_t C, int64_t V, bool accumulate);
// The backward's scatter-add, deterministic and in the CPU's order: the rows of dout sharing an id
// are added to dtable in token order by the one block that owns that id (no atomics), so the
// result is bitwise the CPU's. Ids equal to padding_idx, or outside [0, V), add nothing.
// dout: [N, C]  dtable: [V, C] +=
void embedding_backward_cuda(int device, float* dtable, const int32_t* ids, const float* dout, int64_t N, int64_t C,
                             int64_t V, int32_t padding_idx);

}  // namespace tach::ops
