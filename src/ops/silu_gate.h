// The gate of a gated MLP: out = act(gate) * up, with gate and up the two halves of one fused
// GEMM's output. act is SiLU (SwiGLU: Qwen2, Llama, Mistral, Qwen3), the tanh approximation of
// GELU (GeGLU with gelu_pytorch_tanh: Gemma) or exact GELU (GeGLU with gelu: ModernBERT's Wi,
// whose first half is the activated "input"). The op is named after its activation in traces.
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

enum class GateActivation { silu, gelu_tanh, gelu };
const char* gate_op_name(GateActivation act, bool backward = false);

// gate_up: [N, 2I] A (gate in columns [0, I), up in [I, 2I))  out: [N, I] A
// A, the activation dtype: f32, or on CUDA also bf16 or f16 (gate_up and out in one dtype; act and
// the product in f32, rounded once; the CPU refuses another A by name).
// The backward (f32) needs gate_up itself; training keeps it, inference does not.
void silu_gate_forward(Tensor& out, const Tensor& gate_up, GateActivation act = GateActivation::silu);
OpCost silu_gate_cost(int64_t N, int64_t I, DType dtype = DType::f32);

// d_gate = dout * up * silu'(gate), silu'(g) = s (1 + g (1 - s)), s = sigmoid(g);  d_up = dout * silu(gate).
// dout: [N, I]  gate_up: [N, 2I] (saved)  d_gate_up: [N, 2I] (written)
// GeGLU: d_gate = dout * up * gelu_tanh'(gate), d_up = dout * gelu_tanh(gate).
void silu_gate_backward(Tensor& d_gate_up, const Tensor& gate_up, const Tensor& dout,
                        GateActivation act = GateActivation::silu);
OpCost silu_gate_backward_cost(int64_t N, int64_t I);

// Kernels.
void silu_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I);
void silu_gate_backward_cpu(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I);
// gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))), as torch's approximate="tanh".
void gelu_tanh_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I);
void gelu_tanh_gate_backward_cpu(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I);

// gelu(g) = g/2 (1 + erf(g / sqrt 2)), as torch's default.
void gelu_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I);
void gelu_gate_backward_cpu(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I);

// Every activation of the enum in one kernel family, forward and backward (d_gate_up written).
void gate_forward_cuda(int device, GateActivation act, float* out, const float* gate_up, int64_t N, int64_t I);
// The forward with gate_up and out in `dtype` (f32, bf16, f16).
void gate_forward_cuda(int device, GateActivation act, DType dtype, void* out, const void* gate_up, int64_t N,
                       int64_t I);
void gate_backward_cuda(int device, GateActivation act, float* d_gate_up, const float* gate_up, const float* dout,
                        int64_t N, int64_t I);

}  // namespace tach::ops
