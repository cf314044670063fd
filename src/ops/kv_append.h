// Appends a call's keys and values to the key/value cache: for each sequence b, the T rows of the
// k and v columns of the fused q|k|v buffer go to rows [past, past + T) of b's k and v caches. One
// op for every sequence and both tensors (a decoding step had 2B strided copies), and the length
// can be read from device memory, so that a captured decoding step appends at the right row.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/device.h"
#include "tach/dtype.h"

namespace tach::ops {

struct KvAppendArgs {
  int64_t B = 0, T = 0;          // sequences, new rows per sequence
  int64_t past = 0;              // rows already in the cache
  int64_t capacity = 0;          // rows each sequence's cache holds
  int64_t width = 0;             // KVH * D: one row of keys (or values)
  int64_t ld_qkv = 0;            // row stride of the fused buffer [B, T, ld_qkv]
  int64_t k_col = 0, v_col = 0;  // where the keys and the values start in a fused row
  // CUDA: past read from this i32 in device memory when set (`past` then only sizes the cost).
  const int32_t* device_past = nullptr;
  Device device = Device::cpu();
  // The element dtype of the cache and of the fused buffer (one activation dtype for both): f32,
  // or on CUDA bf16 or f16, the rows copied as they are (no conversion). The CPU: f32 only.
  DType dtype = DType::f32;
};

// cache_k, cache_v: [B, capacity, width] a.dtype  qkv: [B, T, ld_qkv] a.dtype, all on a.device.
void kv_append(void* cache_k, void* cache_v, const void* qkv, const KvAppendArgs& a);
// The f32 form (a.dtype must be f32).
void kv_append(float* cache_k, float* cache_v, const float* qkv, const KvAppendArgs& a);
OpCost kv_append_cost(const KvAppendArgs& a);

// Kernels.
void kv_append_cpu(float* cache_k, float* cache_v, const float* qkv, const KvAppendArgs& a);
// Element-size generic: a.dtype's 4- or 2-byte elements moved as they are.
void kv_append_cuda(int device, void* cache_k, void* cache_v, const void* qkv, const KvAppendArgs& a);

}  // namespace tach::ops
