// Embedding lookup: out[n, :] (+)= table[ids[n], :].
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// ids: [N] i32 (any shape, flattened)  table: [V, C] f32|f16|bf16  out: [N, C] f32
// accumulate=false overwrites out, true adds to it (position and token-type embeddings add
// onto the word embeddings). Every id is checked against V first; an id outside the table is
// an error naming its index and value. Saves nothing for the backward (ids are the input).
void embedding_forward(Tensor& out, const Tensor& ids, const Tensor& table, bool accumulate);
OpCost embedding_cost(int64_t N, int64_t C, DType table_dtype);

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
// outside [0, V) gives a zero row rather than a read outside the table.
void embedding_forward_cuda(int device, float* out, const int32_t* ids, const void* table, DType table_dtype, int64_t N,
                            int64_t C, int64_t V, bool accumulate);

}  // namespace tach::ops
