// Activations in f32, bf16 or f16 inside CUDA kernels (the activation contract: load A, compute
// in f32, round the result once to A, to nearest even as torch does). Kernels are templated on
// the element type T (float, __nv_bfloat16, __half) and use these to load and store; the host
// picks T from a DType with dispatch_activation.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tach/dtype.h"
#include "tach/error.h"

namespace tach::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

// f32 → T, rounded to nearest even (T = float: unchanged).
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// v as a store to T and a load back would give it: the value a later kernel reads. Where
// transformers rounds an intermediate to the model's dtype (a residual sum before its norm), the
// kernels round it here, so that what they compute from it matches.
template <typename T>
__device__ __forceinline__ float round_to(float v) {
  return to_float(from_float<T>(v));
}

// K elements of T loaded or stored as one aligned access (K * sizeof(T) bytes: 8 bf16 are one
// 16-byte load). A kernel uses it where its pointers are aligned to the pack (pack_aligned).
template <typename T, int K>
struct alignas(sizeof(T) * K) Pack {
  T v[K];
};

inline bool pack_aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The type a dispatch hands its callable: `using T = typename decltype(tag)::type;`.
template <typename T>
struct ElementTag {
  using type = T;
};

// Calls f(ElementTag<T>{}) with T the element type of an activation dtype (f32, bf16, f16);
// any other dtype is an error naming the op.
template <typename F>
void dispatch_activation(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::f32: f(ElementTag<float>{}); return;
    case DType::bf16: f(ElementTag<__nv_bfloat16>{}); return;
    case DType::f16: f(ElementTag<__half>{}); return;
    default:
      throw Error(std::string(op) + " on CUDA: activations must be f32, bf16 or f16, got " +
                  std::string(dtype_name(dtype)));
  }
}

}  // namespace tach::cuda
