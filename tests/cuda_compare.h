// Helpers for tests that run an op on the CPU and on CUDA with the same inputs and compare the two
// (test_cuda_ops for inference, test_cuda_train for training). Skipped, saying why, without a CUDA
// device or backend.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tach/device.h"
#include "tach/tensor.h"
#include "test_util.h"

namespace tach::test {

inline const Device kGpu = Device::cuda(0);

// f32 kernels on both sides differ only in summation order: 1e-5 of the values' scale. Attention
// sums exponentials in another order (an online softmax) and the GEMMs use other blockings: 1e-4.
constexpr double kElementwiseTol = 1e-5;
constexpr double kReductionTol = 1e-4;

inline Tensor random_tensor(const Shape& shape, unsigned seed, float scale = 1.0f) {
  Tensor t = Tensor::empty(shape, DType::f32);
  const std::vector<float> v = randn(size_t(t.numel()), seed, scale);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

inline Tensor on_gpu(const Tensor& t) { return t.to_device(kGpu); }
inline Tensor on_cpu(const Tensor& t) { return t.to_device(Device::cpu()); }

// Poisons a device tensor's old values, so that a kernel that leaves an element unwritten shows.
inline void poison(Tensor& t) {
  Tensor nan = Tensor::empty(t.shape(), DType::f32);
  std::fill(nan.data<float>(), nan.data<float>() + nan.numel(), NAN);
  t = nan.to_device(t.device());
}

// Largest |got - want| over the largest |want| (a relative error that stays meaningful where an
// element is near zero by cancellation). NaN anywhere is an infinite error.
inline double scaled_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.numel(), want.numel());
  double err = 0, scale = 1e-6;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = std::fabs(double(got.data<float>()[i]) - double(want.data<float>()[i]));
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, double(std::fabs(want.data<float>()[i])));
  }
  return err / scale;
}

// A test fixture that skips without a CUDA device, naming why.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }
};

}  // namespace tach::test
