// Loads and stores of activations for the GEMVs (cuda/gemv.cu, cuda/quant_gemv.cu): x read 8
// values at a time (16 bytes of bf16/f16, 32 of f32) into f32 registers, y written rounded once
// to its dtype (round to nearest even, as torch does).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/activation_math.cuh"
#include "cuda/gemv.h"

namespace tach::cuda {

enum class ActType { f32, bf16, f16 };

// Two 16-bit values packed in a 32-bit word, low half first (the lower address), as floats.
template <ActType A>
__device__ __forceinline__ float2 unpack_pair(uint32_t word) {
  if constexpr (A == ActType::bf16) return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&word));
  else return __half22float2(*reinterpret_cast<const __half2*>(&word));
}

// x[0..8) as floats; p 16-byte aligned.
template <ActType A>
__device__ __forceinline__ void load8(const void* p, float* x) {
  if constexpr (A == ActType::f32) {
    const float4* q = static_cast<const float4*>(p);
    const float4 a = q[0], b = q[1];
    x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
  } else {
    const uint4 raw = *static_cast<const uint4*>(p);
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = unpack_pair<A>(words[i]);
      x[2 * i] = f.x, x[2 * i + 1] = f.y;
    }
  }
}

template <ActType A>
__device__ __forceinline__ void store1(void* y, int64_t i, float v) {
  if constexpr (A == ActType::f32) static_cast<float*>(y)[i] = v;
  else if constexpr (A == ActType::bf16) static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16_rn(v);
  else static_cast<__half*>(y)[i] = __float2half_rn(v);
}

// The gate's activation: the same device functions as the gate op's kernel (ops/silu_gate_cuda.cu).
__device__ __forceinline__ float gate_activation(GemvGate gate, float g) {
  switch (gate) {
    case GemvGate::gelu_tanh: return gelu_tanh(g);
    case GemvGate::gelu: return gelu_erf(g);
    default: return silu(g);
  }
}

// act(g) · u in f32, rounded once to A, as the gate op writes act: what a GEMV then reads as x.
template <ActType A>
__device__ __forceinline__ float gated_value(GemvGate gate, float g, float u) {
  const float v = gate_activation(gate, g) * u;
  if constexpr (A == ActType::bf16) return __bfloat162float(__float2bfloat16_rn(v));
  else if constexpr (A == ActType::f16) return __half2float(__float2half_rn(v));
  else return v;
}

// x[0..8) = act(gate) · up from gate|up: gate at p (16-byte aligned), up `up_bytes` further.
template <ActType A>
__device__ __forceinline__ void load8_gated(const void* p, int64_t up_bytes, GemvGate gate, float* x) {
  float g[8], u[8];
  load8<A>(p, g);
  load8<A>(static_cast<const char*>(p) + up_bytes, u);
#pragma unroll
  for (int e = 0; e < 8; ++e) x[e] = gated_value<A>(gate, g[e], u[e]);
}

// Bytes per element.
template <ActType A>
constexpr int act_bytes() {
  return A == ActType::f32 ? 4 : 2;
}

}  // namespace tach::cuda
