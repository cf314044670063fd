// Rotary position embeddings (RoFormer; transformers' rotate_half convention, as Qwen2 and
// Llama use): for each head, the pair (x[i], x[i + D/2]) is rotated by angle pos * inv_freq[i].
#pragma once

#include <string>
#include <vector>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

struct RopeSettings {
  int64_t head_dim = 0;
  double theta = 10000.0;
  std::string type = "default";  // default | linear (positions / factor) | dynamic (NTK base rescale)
  double factor = 1.0;
  int64_t max_positions = 0;  // dynamic: the length past which the base grows
};

// inv_freq: [D/2], as transformers computes it. seq_len matters only for dynamic scaling
// (transformers uses max(position) + 1).
std::vector<float> rope_inverse_frequencies(const RopeSettings& s, int64_t seq_len);

// The cos/sin of every (row, frequency): cos, sin: [N, D/2] for positions: [N] i32.
struct RopeTable {
  Tensor cos, sin;
};
RopeTable rope_table(const Tensor& positions, const std::vector<float>& inv_freq);

// x: [N, heads*D] f32 view with row stride ld (the q or k columns of a fused qkv buffer),
// rotated in place. Saves nothing for the backward (it is the same rotation, transposed).
void rope_forward(float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const RopeTable& table);
OpCost rope_cost(int64_t N, int64_t heads, int64_t D);

}  // namespace tach::ops
