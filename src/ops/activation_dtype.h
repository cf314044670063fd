// The activation dtype rules the element-wise, norm and data-movement ops share (issue 49's
// contract): on CUDA an op's activation tensors are f32, bf16 or f16, all in one dtype A per
// call; parameters (norm weights, biases, tables) stay f32; the CPU computes in f32 only.
#pragma once

#include <string>

#include "ops/dispatch.h"
#include "ops/train_checks.h"
#include "tach/dtype.h"
#include "tach/error.h"
#include "tach/tensor.h"

namespace tach::ops {

inline bool is_activation_dtype(DType dtype) {
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

// A itself: f32, bf16 or f16, and f32 on the CPU (the CPU kernels compute in f32 only: another A
// there is the op's unsupported() error, which names the op, the device and the dtype).
inline void check_activation_dtype(const char* op, Device device, DType A) {
  if (!is_activation_dtype(A) || (device.kind == DeviceKind::cpu && A != DType::f32)) unsupported(op, device, A);
}

// An activation operand `name` of the call must be in the call's A (undefined tensors are skipped:
// optional operands). The error names the op, the operand and both dtypes.
inline void expect_activation_dtype(const char* op, const char* name, const Tensor& t, DType A) {
  if (!t.defined() || t.dtype() == A) return;
  throw Error(std::string(op) + ": " + name + " is " + std::string(dtype_name(t.dtype())) +
              " but the call's activations are " + std::string(dtype_name(A)) +
              " (every activation operand of one call has one dtype; convert with ops::cast)");
}

// A dense activation tensor of n elements in A (the element-wise ops' operands). The message is
// built only on failure.
inline void expect_activations(const char* op, const char* name, const Tensor& t, int64_t n, DType A) {
  if (t.defined() && t.dtype() != A && is_activation_dtype(t.dtype()) && is_activation_dtype(A))
    expect_activation_dtype(op, name, t, A);
  if (!t.defined() || t.dtype() != A || !is_activation_dtype(A) || t.numel() != n || !dense(t))
    throw Error(std::string(op) + ": " + name + " " + (t.defined() ? t.describe() : std::string("(undefined)")) +
                " must be a contiguous f32, bf16 or f16 tensor of " + std::to_string(n) + " elements");
}

}  // namespace tach::ops
