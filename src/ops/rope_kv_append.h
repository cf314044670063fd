// Decoding's RoPE and key/value cache append as one op: the query and key heads of each new row
// rotated in place in the fused q|k|v buffer (rope_forward), and the rotated keys and the values
// appended to the cache (kv_append), in one kernel on a GPU where a step ran two: the keys are
// rotated and stored to the buffer and the cache from the same registers. The same results, bit
// for bit, as the two ops one after the other.
#pragma once

#include <cstdint>

#include "ops/kv_append.h"
#include "ops/op_cost.h"
#include "ops/rope.h"

namespace tach::ops {

// qkv: [B·T, a.ld_qkv] in a.dtype, the q_heads query heads of D values in its first columns and the
// keys right after them (a.k_col == q_heads·D, a.width a whole number of heads D); the values at
// a.v_col. table: cos, sin [B·T, D/2] f32 for the rows' positions. cache_k, cache_v: as kv_append.
// Every pointer and tensor on a.device (a.device_past read there on a GPU, as kv_append).
void rope_kv_append(void* qkv, void* cache_k, void* cache_v, const KvAppendArgs& a, int64_t q_heads, int64_t D,
                    const RopeTable& table);
// The two ops' costs, less the keys' second read and write of the buffer (the append reads the
// rotated keys from the registers that wrote them).
OpCost rope_kv_append_cost(const KvAppendArgs& a, int64_t q_heads, int64_t D);

// CUDA kernel (ops/rope_kv_append_cuda.cu): one grid-stride pass over each row's rotation pairs and
// its values.
void rope_kv_append_cuda(int device, void* qkv, void* cache_k, void* cache_v, const KvAppendArgs& a, int64_t q_heads,
                         int64_t D, const float* cos_table, const float* sin_table);

}  // namespace tach::ops
