#include <gtest/gtest.h>

#include "tach/error.h"
#include "tach/memory.h"
#include "tach/tensor.h"

namespace tach {
namespace {

TEST(Tensor, ContiguousShapeAndStrides) {
  Tensor t = Tensor::zeros({2, 3, 4}, DType::f32);
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.describe(), "f32[2, 3, 4] cpu");
}

TEST(Tensor, NarrowIsAViewAndContiguousCopies) {
  Tensor t = Tensor::empty({2, 6}, DType::f32);
  for (int i = 0; i < 12; ++i) t.data<float>()[i] = float(i);
  Tensor v = t.narrow(1, 2, 3);  // columns 2..4
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.storage(), t.storage());
  Tensor c = v.contiguous();
  ASSERT_TRUE(c.is_contiguous());
  const float expect[] = {2, 3, 4, 8, 9, 10};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data<float>()[i], expect[i]);
  EXPECT_THROW(v.reshape({6}), Error);
  EXPECT_THROW(t.narrow(1, 4, 3), Error);
}

TEST(Tensor, DtypeConversionRoundTrip) {
  Tensor t = Tensor::empty({3}, DType::f32);
  t.data<float>()[0] = 1.0f;
  t.data<float>()[1] = -2.5f;
  t.data<float>()[2] = 0.1f;
  Tensor b = t.to(DType::bf16).to(DType::f16).to(DType::f32);
  EXPECT_EQ(b.data<float>()[0], 1.0f);
  EXPECT_EQ(b.data<float>()[1], -2.5f);
  EXPECT_NEAR(b.data<float>()[2], 0.1f, 1e-3);
}

TEST(Tensor, BorrowedViewKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(4, 7.0f);
  Tensor t = Tensor::from_borrowed(owner->data(), {2, 2}, DType::f32, owner);
  std::weak_ptr<std::vector<float>> weak = owner;
  owner.reset();
  EXPECT_FALSE(weak.expired());
  EXPECT_TRUE(t.is_view_of_borrowed());
  EXPECT_EQ(t.data<float>()[3], 7.0f);
  t = Tensor();
  EXPECT_TRUE(weak.expired());
}

TEST(Memory, AccountingIsExactPerCategory) {
  const MemoryStats s0 = memory_stats(Device::cpu());
  reset_memory_peaks(Device::cpu());
  {
    Tensor a = Tensor::empty({1000}, DType::f32, Device::cpu(), MemoryCategory::gradients);
    Tensor b = Tensor::empty({10}, DType::bf16, Device::cpu(), MemoryCategory::optimizer_state);
    const MemoryStats s1 = memory_stats(Device::cpu());
    EXPECT_EQ(s1[MemoryCategory::gradients].current - s0[MemoryCategory::gradients].current, 4000);
    EXPECT_EQ(s1[MemoryCategory::optimizer_state].current - s0[MemoryCategory::optimizer_state].current, 20);
    EXPECT_EQ(s1.total.current - s0.total.current, 4020);
    EXPECT_EQ(s1.allocations - s0.allocations, 2);
  }
  const MemoryStats s2 = memory_stats(Device::cpu());
  EXPECT_EQ(s2.total.current, s0.total.current);
  EXPECT_EQ(s2[MemoryCategory::gradients].peak - s0[MemoryCategory::gradients].current, 4000);
  EXPECT_GE(s2.total.peak, s0.total.current + 4020);
  reset_memory_peaks(Device::cpu());
  EXPECT_EQ(memory_stats(Device::cpu()).total.peak, s2.total.current);
}

TEST(Memory, LargeBlocksAreCachedAndCountedApart) {
  release_cached_memory(Device::cpu());
  const MemoryStats s0 = memory_stats(Device::cpu());
  const void* first = nullptr;
  {
    Tensor a = Tensor::empty({1 << 20}, DType::f32);  // 4 MiB: cached on free
    first = a.raw();
  }
  const MemoryStats s1 = memory_stats(Device::cpu());
  EXPECT_EQ(s1.cached.current - s0.cached.current, 4 << 20);
  EXPECT_EQ(s1.total.current, s0.total.current);  // not in use any more
  {
    Tensor b = Tensor::empty({1 << 20}, DType::f32, Device::cpu(), MemoryCategory::workspace);
    EXPECT_EQ(b.raw(), first);  // the same block, no new pages
    EXPECT_EQ(memory_stats(Device::cpu()).cached.current, s0.cached.current);
    EXPECT_EQ(memory_stats(Device::cpu())[MemoryCategory::workspace].current - s0[MemoryCategory::workspace].current,
              4 << 20);
  }
  EXPECT_EQ(release_cached_memory(Device::cpu()), int64_t(s1.cached.current));
  EXPECT_EQ(memory_stats(Device::cpu()).cached.current, 0);
  {
    Tensor small = Tensor::empty({100}, DType::f32);  // small blocks go straight back
  }
  EXPECT_EQ(memory_stats(Device::cpu()).cached.current, 0);
}

TEST(Memory, CudaWithoutBackendIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present; this checks the CPU-only path";
  try {
    Tensor::empty({4}, DType::f32, Device::cuda(0));
    FAIL() << "expected an error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what(); }
}

// to_device on the CPU: a contiguous copy (strided views gathered), counted in the category asked.
TEST(Tensor, ToDeviceCopiesAndCounts) {
  Tensor t = Tensor::empty({4, 6}, DType::f32);
  for (int i = 0; i < 24; ++i) t.data<float>()[i] = float(i);
  const MemoryStats before = memory_stats(Device::cpu());
  const Tensor copy = t.to_device(Device::cpu(), MemoryCategory::weights);
  EXPECT_NE(copy.raw(), t.raw());
  EXPECT_EQ(t.on(Device::cpu()).raw(), t.raw()) << "already there: no copy";
  EXPECT_EQ(memory_stats(Device::cpu())[MemoryCategory::weights].current - before[MemoryCategory::weights].current,
            int64_t(t.nbytes()));
  const Tensor cols = t.narrow(1, 2, 3).to_device(Device::cpu());
  ASSERT_TRUE(cols.is_contiguous());
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(cols.data<float>()[r * 3 + c], float(r * 6 + 2 + c));
  const Tensor z = Tensor::zeros({1000}, DType::i32);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(z.data<int32_t>()[i], 0);
}

TEST(Device, TimerHasNoDeviceClockOnTheCpu) {
  DeviceTimer timer(Device::cpu());
  timer.start();
  timer.stop();
  EXPECT_EQ(timer.elapsed_ms(), -1.0);
}

TEST(Device, Parse) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda:3"), Device::cuda(3));
  EXPECT_THROW(parse_device("cuda:x"), Error);
  EXPECT_THROW(parse_device("tpu"), Error);
}

}  // namespace
}  // namespace tach
