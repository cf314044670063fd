// Argument checks for the training entry points. A step calls them thousands of times, so they
// allocate nothing unless they fail: the message is built only then (Tensor::is_contiguous and a
// check() with a concatenated message would each allocate on every call).
#pragma once

#include <cstdint>
#include <string>

#include "tach/error.h"
#include "tach/tensor.h"

namespace tach::ops {

// Elements in memory order without gaps (size-1 dimensions may have any stride): what a kernel
// taking a raw pointer and a count reads.
inline bool dense(const Tensor& t) {
  int64_t expect = 1;
  for (int d = t.dim() - 1; d >= 0; --d) {
    const int64_t n = t.shape()[size_t(d)];
    if (n != 1 && t.strides()[size_t(d)] != expect) return false;
    expect *= n;
  }
  return true;
}

[[noreturn]] inline void bad_tensor(const char* op, const char* name, const Tensor& t, const std::string& want) {
  throw Error(std::string(op) + ": " + name + " " + (t.defined() ? t.describe() : std::string("(undefined)")) +
              " must be " + want);
}

// A dense f32 tensor of `numel` elements.
inline void expect_f32(const char* op, const char* name, const Tensor& t, int64_t numel) {
  if (!t.defined() || t.dtype() != DType::f32 || t.numel() != numel || !dense(t))
    bad_tensor(op, name, t, "a contiguous f32 tensor of " + std::to_string(numel) + " elements");
}

// A dense f64 tensor of `numel` elements on `device`: a loss or a norm left on the device.
inline void expect_f64_on(const char* op, const char* name, const Tensor& t, int64_t numel, Device device) {
  if (!t.defined() || t.dtype() != DType::f64 || t.numel() != numel || !dense(t) || !(t.device() == device))
    bad_tensor(op, name, t, "a contiguous f64 tensor of " + std::to_string(numel) + " elements on " + device.str());
}

// A dense f32 matrix [rows, cols].
inline void expect_matrix(const char* op, const char* name, const Tensor& t, int64_t rows, int64_t cols) {
  if (!t.defined() || t.dtype() != DType::f32 || t.dim() != 2 || t.shape()[0] != rows || t.shape()[1] != cols ||
      !dense(t))
    bad_tensor(op, name, t, "a contiguous f32 [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

// As expect_f32 when defined; undefined means "skip" (a frozen parameter's gradient).
inline void expect_f32_or_none(const char* op, const char* name, const Tensor& t, int64_t numel) {
  if (t.defined()) expect_f32(op, name, t, numel);
}

// A 2-D f32 view [rows, cols] whose rows may be strided (a row block, every T-th row) with
// unit column stride.
inline void expect_rows(const char* op, const char* name, const Tensor& t, int64_t rows, int64_t cols) {
  if (!t.defined() || t.dtype() != DType::f32 || t.dim() != 2 || t.shape()[0] != rows || t.shape()[1] != cols ||
      (cols > 1 && t.strides()[1] != 1) || (rows > 1 && t.strides()[0] < cols))
    bad_tensor(op, name, t,
               "an f32 [" + std::to_string(rows) + ", " + std::to_string(cols) + "] with unit column stride");
}

}  // namespace tach::ops
