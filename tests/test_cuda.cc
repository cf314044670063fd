// GPU tests: skipped, saying why, on machines without a CUDA device or without the backend.
#include <gtest/gtest.h>

#include "tach/memory.h"
#include "tach/tensor.h"

namespace tach {
namespace {

TEST(Cuda, AllocatorCountsDeviceMemory) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  const MemoryStats s0 = memory_stats(Device::cuda(0));
  {
    Tensor t = Tensor::empty({1 << 20}, DType::f32, Device::cuda(0), MemoryCategory::activations);
    EXPECT_EQ(memory_stats(Device::cuda(0)).total.current - s0.total.current, 4 << 20);
  }
  EXPECT_EQ(memory_stats(Device::cuda(0)).total.current, s0.total.current);
}

TEST(Cuda, DevicesReportMemory) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  const auto devices = cuda_devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_GT(devices[0].total_bytes, 0u);
  EXPECT_FALSE(devices[0].name.empty());
}

}  // namespace
}  // namespace tach
