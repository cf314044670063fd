// The SwiGLU gate of Qwen2/Llama MLPs: out = silu(gate) * up, with gate and up the two halves
// of one fused GEMM's output.
#pragma once

#include "ops/op_cost.h"

namespace tach::ops {

// gate_up: [N, 2I] f32 (gate in columns [0, I), up in [I, 2I))  out: [N, I] f32
// The backward would need gate_up; inference keeps nothing.
void silu_gate_forward_cpu(float* out, const float* gate_up, int64_t N, int64_t I);
OpCost silu_gate_cost(int64_t N, int64_t I);

}  // namespace tach::ops
