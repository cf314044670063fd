// A linear layer whose weights are packed once, at load, into oneDNN's preferred blocked
// layout, with the bias and the activation fused into the GEMM as post-ops. This is where
// nearly all of an encoder's FLOPs go, so it is where the engine earns its speed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "tach/dtype.h"
#include "tach/tensor.h"

namespace tach::cpu {

// gelu_tanh: torch's GELU(approximate="tanh"), transformers' gelu_pytorch_tanh and gelu_new:
// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
enum class FusedActivation { none, gelu_erf, relu, tanh, gelu_tanh };
class Int8Linear;
class Bf16WeightLinear;
class Nf4Linear;
class PanelLinear;

// y = act(y) in place over [M, N] (row stride ld), for the layers whose GEMM cannot apply it
// as a post-op (int8's int32 output, NF4's own kernels).
void apply_fused_activation(FusedActivation activation, float* y, int64_t M, int64_t N, int64_t ld);
// y[m, :] += bias for every row of [M, N] (row stride ld); nothing when bias is null.
void add_bias_rows(float* y, int64_t M, int64_t N, int64_t ld, const float* bias);

class PackedLinear {
 public:
  // weight: [N, K] (nn.Linear layout, any float dtype)  bias: [N] or undefined
  // compute: f32, bf16 (weights and activations rounded to bf16, f32 accumulation and output; on a
  //          CPU without a bf16 GEMM, bf16 weights widened to f32: cpu/bf16_weight_linear.h), or
  //          i8 (dynamic int8: cpu/int8_linear.h), nf4 (4-bit weights, f32 compute: cpu/nf4_linear.h;
  //          a weight that does not split into 64-weight blocks stays f32, and compute_dtype() says so)
  //          f32 runs on oneDNN's packed weights, or for decoding on tach's panel kernels where oneDNN's
  //          matmul would repack at every call (CPUs without AVX-512; cpu/panel_linear.h).
  // packing_rows: the M oneDNN is asked to choose the weight layout for (every M reuses it).
  // decoding: the layer will mostly run a few rows per call (token-by-token generation); f32 then
  //           takes tach's panel kernels where PanelLinear::chosen_for says so.
  PackedLinear(const Tensor& weight, const Tensor& bias, DType compute, FusedActivation activation,
               int64_t packing_rows = 128, bool decoding = false);
  ~PackedLinear();
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  // x: [M, K] f32 (row stride ldx)  y: [M, N] f32 (row stride ldy)
  void forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const;

  int64_t in_features() const { return K_; }
  int64_t out_features() const { return N_; }
  DType compute_dtype() const { return compute_; }
  bool has_bias() const { return has_bias_; }
  // The weight's bytes as placed in memory, padding of the packed layout included.
  size_t packed_bytes() const;
  // The least a call reads of them: oneDNN's packed layouts (f32, bf16, int8) pad N and K up to
  // whole blocks (64 x 64 for int8 on VNNI: 4x the codes of a 32 x 32 weight) that its kernels
  // mask off and never load, so those count the weight itself (int8: its codes and per-channel
  // scales); tach's own layouts count what their kernels stream (panels: the padded columns too).
  size_t bytes_read() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Int8Linear> int8_;                // compute i8: the whole layer lives here
  std::unique_ptr<Nf4Linear> nf4_;                  // compute nf4: likewise
  std::unique_ptr<Bf16WeightLinear> bf16_weights_;  // bf16 without a bf16 GEMM: bf16 weights, f32 arithmetic
  std::unique_ptr<PanelLinear> panels_;             // f32 decoding where oneDNN's matmul repacks every call (AVX2)
  int64_t N_ = 0, K_ = 0;
  DType compute_ = DType::f32;
  bool has_bias_ = false;
};

}  // namespace tach::cpu
