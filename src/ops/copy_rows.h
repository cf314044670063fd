// Copies a block of rows between two strided buffers on one device: gathering one row per
// sequence (the token a head reads, a decoder's last rows). An op so that the profile counts its
// bytes. Rows are moved as they are, in f32, or on CUDA bf16 or f16 (the activation dtype; the
// CPU moves f32 only, as its ops compute in f32).
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/device.h"
#include "tach/dtype.h"
#include "tach/tensor.h"

namespace tach::ops {

// src: [rows, cols] with row stride ld_src  dst: [rows, cols] with row stride ld_dst (strides in
// elements), both of `dtype` on `device`; they must not overlap.
void copy_rows(Device device, DType dtype, void* dst, int64_t ld_dst, const void* src, int64_t ld_src, int64_t rows,
               int64_t cols);
// The f32 form.
void copy_rows(Device device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);
OpCost copy_rows_cost(int64_t rows, int64_t cols, DType dtype = DType::f32);
// The same over views: dst, src: [rows, cols] of one dtype with unit column stride (rows may be
// strided: t.reshape({B, T * C}).narrow(1, 0, C) is each sequence's first row), not overlapping.
void copy_rows(const Tensor& dst, const Tensor& src);
// The rows of src at `rows` in order (the masked LM's predicted tokens), as the op "copy_rows":
// src: [N, C]  rows: [M] i32, each in [0, N)  dst: [M, C], contiguous, on one device; src and dst
// in one dtype (f32; bf16 or f16 on CUDA).
void gather_rows(const Tensor& dst, const Tensor& src, const Tensor& rows);
// Their inverse: dst [N, C] row rows[m] = src [M, C] row m; dst's other rows are left as they are.
void scatter_rows(const Tensor& dst, const Tensor& rows, const Tensor& src);

// CUDA (ops/copy_rows_cuda.cu): one cudaMemcpy2DAsync on tach's stream; elements of `dtype`.
void copy_rows_cuda(int device, DType dtype, void* dst, int64_t ld_dst, const void* src, int64_t ld_src, int64_t rows,
                    int64_t cols);
void copy_rows_cuda(int device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                    int64_t cols);
// gather: dst [M, C] row m = src [N, C] row rows[m]; scatter: dst [N, C] row rows[m] = src [M, C]
// row m, the last m winning where ids repeat. rows: [M] i32 on the device, unchecked there: an id
// outside [0, N) gathers zeros and scatters nothing. Elements of `dtype` (f32, bf16, f16), moved
// as they are; the float* forms are f32.
void gather_rows_cuda(int device, DType dtype, void* dst, const void* src, const int32_t* rows, int64_t M, int64_t C,
                      int64_t N);
void scatter_rows_cuda(int device, DType dtype, void* dst, const int32_t* rows, const void* src, int64_t M, int64_t C,
                       int64_t N);
void gather_rows_cuda(int device, float* dst, const float* src, const int32_t* rows, int64_t M, int64_t C, int64_t N);
void scatter_rows_cuda(int device, float* dst, const int32_t* rows, const float* src, int64_t M, int64_t C, int64_t N);

}  // namespace tach::ops
