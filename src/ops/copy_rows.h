// Copies a block of rows between two strided f32 buffers on one device: the key/value cache
// append (rows of the fused q|k|v output into the cache) and gathering one row per sequence
// (the token a head reads). An op so that the profile counts its bytes.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/device.h"
#include "tach/tensor.h"

namespace tach::ops {

// src: [rows, cols] f32 with row stride ld_src  dst: [rows, cols] f32 with row stride ld_dst,
// both on `device`; they must not overlap.
void copy_rows(Device device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows, int64_t cols);
OpCost copy_rows_cost(int64_t rows, int64_t cols);
// The same over views: dst, src: f32 [rows, cols] with unit column stride (rows may be strided:
// t.reshape({B, T * C}).narrow(1, 0, C) is each sequence's first row), not overlapping.
void copy_rows(const Tensor& dst, const Tensor& src);
// The rows of src at `rows` in order (the masked LM's predicted tokens), as the op "copy_rows":
// src: [N, C] f32  rows: [M] i32, each in [0, N)  dst: [M, C] f32, contiguous, on one device.
void gather_rows(const Tensor& dst, const Tensor& src, const Tensor& rows);
// Their inverse: dst [N, C] row rows[m] = src [M, C] row m; dst's other rows are left as they are.
void scatter_rows(const Tensor& dst, const Tensor& rows, const Tensor& src);

// CUDA (ops/copy_rows_cuda.cu): one cudaMemcpy2DAsync on tach's stream.
void copy_rows_cuda(int device, float* dst, int64_t ld_dst, const float* src, int64_t ld_src, int64_t rows,
                    int64_t cols);
// gather: dst [M, C] row m = src [N, C] row rows[m]; scatter: dst [N, C] row rows[m] = src [M, C]
// row m, the last m winning where ids repeat. rows: [M] i32 on the device, unchecked there: an id
// outside [0, N) gathers zeros and scatters nothing.
void gather_rows_cuda(int device, float* dst, const float* src, const int32_t* rows, int64_t M, int64_t C, int64_t N);
void scatter_rows_cuda(int device, float* dst, const int32_t* rows, const float* src, int64_t M, int64_t C, int64_t N);

}  // namespace tach::ops
