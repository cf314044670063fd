// Converts a tensor between the floating dtypes f32, bf16 and f16, rounding to nearest even as
// torch's .to() does (bf16 → f16 goes through f32, which holds every bf16 exactly, so it too
// rounds once). The models use it at the edges of a forward computed in bf16 or f16: the
// activations the first layer reads, the f32 logits or pooled vectors the heads hand back.
#pragma once

#include <cstdint>

#include "ops/op_cost.h"
#include "tach/dtype.h"
#include "tach/tensor.h"

namespace tach::ops {

// out, in: tensors of one element count, each contiguous, on one device (the CPU or a GPU), each
// f32, bf16 or f16 (equal dtypes: a copy). NaN stays NaN, values past f16's range become
// infinities. The op "cast"; its span names both dtypes.
void cast(const Tensor& out, const Tensor& in);
OpCost cast_cost(int64_t n, DType from, DType to);

// Kernels: n elements from src (src_dtype) to dst (dst_dtype), not overlapping.
// The CPU's converts through core's conversions (tach/dtype.h), in blocks.
void cast_cpu(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n);
// CUDA (ops/cast_cuda.cu): cuda_bf16.h's and cuda_fp16.h's round-to-nearest-even conversions, the
// same bits as the CPU's for every non-NaN value; 16-byte loads where both pointers allow them.
void cast_cuda(int device, void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n);

}  // namespace tach::ops
