// A linear layer with dynamic int8 quantization (`--dtype int8`): the weight quantized once, per
// output channel, and packed for oneDNN's int8 matmul; each call quantizes the activations per
// token, multiplies in int8 with int32 sums, and turns the sums back into f32 with the bias and
// activation applied (cpu/int8_quant.h says how saturation is avoided).
#pragma once

#include <cstdint>
#include <memory>

#include "cpu/packed_linear.h"
#include "tach/tensor.h"

namespace tach::cpu {

class Int8Linear {
 public:
  // weight: [N, K] (any float dtype)  bias: [N] or undefined
  Int8Linear(const Tensor& weight, const Tensor& bias, FusedActivation activation, int64_t packing_rows = 128);
  ~Int8Linear();
  Int8Linear(const Int8Linear&) = delete;
  Int8Linear& operator=(const Int8Linear&) = delete;

  // x: [M, K] f32 (row stride ldx)  y: [M, N] f32 (row stride ldy)
  void forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const;

  // The int8 GEMM alone: codes [M, K] s8 (dense) · the packed weight → acc [M, N] int32 (row
  // stride ldacc). forward is this between quantizing x and the epilogue; the ceiling times it.
  void multiply_codes(const int8_t* codes, int64_t M, int32_t* acc, int64_t ldacc) const;

  // Bytes of the packed int8 weight plus its per-channel scales (the f32 bias apart, as PackedLinear's).
  size_t packed_bytes() const;
  // The least a call reads: the codes (1 B each) and the scales, not the blocked layout's padding.
  size_t bytes_read() const { return size_t(columns_) * size_t(K_) + size_t(N_) * sizeof(float); }
  int weight_code_limit() const { return limit_; }

 private:
  // multiply_codes into `columns_` columns of acc: N, or 2 for a one-column layer on the 7-bit path.
  void multiply_columns(const int8_t* codes, int64_t M, int32_t* acc, int64_t ldacc) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t N_ = 0, K_ = 0, columns_ = 0;
  int limit_ = 127;
};

}  // namespace tach::cpu
