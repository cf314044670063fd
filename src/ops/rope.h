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

// qkv: [N, ld] f32 with the query heads in columns [0, q_heads*D) and the key heads right after
// them (a fused q|k|v buffer); both are rotated in place, values untouched.
// The backward is the same rotation by the opposite angle (a rotation's transpose), applied to
// the gradient of the rotated q and k in place: nothing is saved.
void rope_forward(Tensor& qkv, int64_t q_heads, int64_t k_heads, int64_t D, const RopeTable& table);
void rope_backward(Tensor& d_qkv, int64_t q_heads, int64_t k_heads, int64_t D, const RopeTable& table);
OpCost rope_cost(int64_t N, int64_t heads, int64_t D);

// Kernel: heads*D columns of x: [N, ld], rotated by +angle (forward) or -angle (backward).
void rope_rotate_cpu(float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const RopeTable& table, bool inverse);

// CUDA kernel: heads*D columns of x: [N, ld] rotated in place; cos, sin: [N, D/2] on the device
// (a RopeTable copied with to_device).
void rope_rotate_cuda(int device, float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const float* cos_table,
                      const float* sin_table, bool inverse);

}  // namespace tach::ops
