// Rotary position embeddings (RoFormer; transformers' rotate_half convention, as Qwen2 and
// Llama use): for each head, the pair (x[i], x[i + D/2]) is rotated by angle pos * inv_freq[i].
#pragma once

#include <string>
#include <vector>

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// The rope types transformers computes in modeling_rope_utils.py, as config.json names them.
struct RopeSettings {
  int64_t head_dim = 0;
  double theta = 10000.0;
  // default | linear (positions / factor) | dynamic (NTK base rescale) | llama3 (Llama 3.1's
  // wavelength-banded interpolation) | yarn (NTK-by-parts ramp and an attention temperature)
  std::string type = "default";
  double factor = 1.0;
  int64_t max_positions = 0;  // dynamic: the length past which the base grows
  // llama3 and yarn: the pre-training context the scaling is measured from.
  int64_t original_max_positions = 0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn: the ramp's rotation counts
  double attention_factor = 0.0;                         // yarn: cos and sin are scaled by it (0: derived from factor)
  bool truncate = true;                                  // yarn: the ramp's ends rounded to whole dimensions
  double mscale = 0.0, mscale_all_dim = 0.0;             // yarn (DeepSeek's): the attention factor's ratio
};

// inv_freq: [D/2], as transformers computes it. seq_len matters only for dynamic scaling
// (transformers uses max(position) + 1).
std::vector<float> rope_inverse_frequencies(const RopeSettings& s, int64_t seq_len);
// The factor transformers multiplies cos and sin by (1 but for yarn).
double rope_attention_factor(const RopeSettings& s);

// The cos/sin of every (row, frequency): cos, sin: [N, D/2] for positions: [N] i32, each times
// attention_factor.
struct RopeTable {
  Tensor cos, sin;
};
RopeTable rope_table(const Tensor& positions, const std::vector<float>& inv_freq, double attention_factor = 1.0);
// Both steps for a settings row: what a forward calls once per distinct RoPE (Gemma 3's local
// layers have their own).
RopeTable rope_table(const Tensor& positions, const RopeSettings& s, int64_t seq_len);

// qkv: [N, ld] with the query heads in columns [0, q_heads*D) and the key heads right after
// them (a fused q|k|v buffer); both are rotated in place, values untouched. The forward's qkv is
// in the activation dtype A: f32, or on CUDA also bf16 or f16 (the rotation in f32 with the f32
// tables, each element rounded once to A; the CPU refuses another A by name). The backward is f32.
// The backward is the same rotation by the opposite angle (a rotation's transpose), applied to
// the gradient of the rotated q and k in place: nothing is saved.
void rope_forward(Tensor& qkv, int64_t q_heads, int64_t k_heads, int64_t D, const RopeTable& table);
void rope_backward(Tensor& d_qkv, int64_t q_heads, int64_t k_heads, int64_t D, const RopeTable& table);
OpCost rope_cost(int64_t N, int64_t heads, int64_t D, DType dtype = DType::f32);

// Kernel: heads*D columns of x: [N, ld], rotated by +angle (forward) or -angle (backward).
void rope_rotate_cpu(float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const RopeTable& table, bool inverse);

// CUDA kernel: heads*D columns of x: [N, ld] rotated in place; cos, sin: [N, D/2] on the device
// (a RopeTable copied with to_device).
void rope_rotate_cuda(int device, float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const float* cos_table,
                      const float* sin_table, bool inverse);
// The same with x in `dtype` (f32, bf16, f16); the tables stay f32.
void rope_rotate_cuda(int device, DType dtype, void* x, int64_t N, int64_t heads, int64_t D, int64_t ld,
                      const float* cos_table, const float* sin_table, bool inverse);

}  // namespace tach::ops
