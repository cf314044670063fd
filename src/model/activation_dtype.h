// The dtype of an inference forward's activations: the residual stream, every GEMM's input and
// output, attention's q, k, v and output, and a decoder's key/value cache.
#pragma once

#include "ops/linear.h"
#include "tach/dtype.h"
#include "tach/tensor.h"

#include <string>

namespace tach::model {

// The linears' activation dtype (ops::Linear::activation_dtype): bf16 or f16 on a GPU for a model
// computed in bf16 or f16 (and bf16 for its int8/NF4 weights), as transformers runs a bf16 model
// (norms and softmax still accumulate in f32); f32 on the CPU and for f32 models.
// TACH_GPU_ACTIVATIONS=f32 keeps f32 activations around bf16/f16 GEMMs (each GEMM converts its
// input and writes f32, attention converts q|k|v), the way tach ran before, to measure what the
// 16-bit activations bring; it has no effect where the linear takes 16-bit inputs only (int8/NF4).
DType inference_activations(const ops::Linear& first_linear);

// The dtypes a forward's costs count bytes at: the linears' weights (the compute dtype), the
// embedding table (as stored) and the activations.
struct ForwardDtypes {
  DType weights = DType::f32, embeddings = DType::f32, activations = DType::f32;
};

// What the notes of a model loaded on a GPU say of its activations ("" on a CPU, where they are
// f32 as ever): 16-bit end to end, or f32 around 16-bit GEMMs when TACH_GPU_ACTIVATIONS=f32 asks.
std::string activations_note(DType compute, DType activations, Device device);

// t when it is f32, else an f32 copy on its device through the op `cast` (a forward's output,
// which heads and callers read in f32 whatever the activations were).
Tensor as_f32(const Tensor& t);

}  // namespace tach::model
