// The SwiGLU gate of Qwen2/Llama MLPs: out = silu(gate) * up, with gate and up the two halves
// of one fused GEMM's output.
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// gate_up: [N, 2I] f32 (gate in columns [0, I), up in [I, 2I))  out: [N, I] f32
// The backward needs gate_up itself; training keeps it, inference does not.
void silu_gate_forward(Tensor& out, const Tensor& gate_up);
OpCost silu_gate_cost(int64_t N, int64_t I);

// d_gate = dout * up * silu'(gate), silu'(g) = s (1 + g (1 - s)), s = sigmoid(g);  d_up = dout * silu(gate).
// dout: [N, I]  gate_up: [N, 2I] (saved)  d_gate_up: [N, 2I] (written)
void silu_gate_backward(Tensor& d_gate_up, const Tensor& gate_up, const Tensor& dout);
OpCost silu_gate_backward_cost(int64_t N, int64_t I);

// Kernels.
void silu_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I);
void silu_gate_backward_cpu(float* d_gate_up, const float* gate_up, const float* dout, int64_t N, int64_t I);

void silu_gate_forward_cuda(int device, float* out, const float* gate_up, int64_t N, int64_t I);

}  // namespace tach::ops
