// The residual add, y += x, as an op of its own so that the profile counts it. Its backward is
// the identity on both branches: the callers copy or accumulate the gradient themselves.
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// y, x: [n] f32 on the CPU
void add_inplace(float* y, const float* x, int64_t n);
// y += x, tensors of one size on one device (the CPU or a GPU); contiguous, or two [rows, cols]
// views with strided rows (a classifier's last layer adds at the first token of each sequence:
// rows T·C apart), one op either way. f32, or on CUDA bf16 or f16 (y and x in one dtype; the sum
// in f32 rounded once, as torch adds two bf16 tensors).
void add_inplace(const Tensor& y, const Tensor& x);
OpCost add_cost(int64_t n, DType dtype = DType::f32);

// x *= s, as an op (Gemma's embedding scale). x: [n] f32 on the CPU or a GPU, or bf16/f16 on a GPU
// (the product in f32, rounded once; s is not rounded to x's dtype first).
void scale_inplace(Tensor& x, float s);
OpCost scale_cost(int64_t n, DType dtype = DType::f32);

void scale_inplace_cuda(int device, float* x, float s, int64_t n);
void add_inplace_cuda(int device, float* y, const float* x, int64_t n);
// y: [rows, cols] with row stride ldy += x: [rows, cols] with row stride ldx
void add_rows_cuda(int device, float* y, int64_t ldy, const float* x, int64_t ldx, int64_t rows, int64_t cols);
// The same in `dtype` (f32, bf16, f16): pointers to elements of it, strides in elements.
void scale_inplace_cuda(int device, DType dtype, void* x, float s, int64_t n);
void add_rows_cuda(int device, DType dtype, void* y, int64_t ldy, const void* x, int64_t ldx, int64_t rows,
                   int64_t cols);

}  // namespace tach::ops
