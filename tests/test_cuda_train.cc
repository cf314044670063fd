// Training on CUDA against the CPU: every training op's forward and backward entry point run on
// both devices with the same inputs and compared (tests/cuda_train/*.cc, one file per group of
// ops), then whole steps. The CPU side is itself checked against transformers and peft
// (test_train_*), so agreement here checks the CUDA kernels. Skipped, saying why, without a GPU.
#include "cuda_compare.h"

namespace tach::test {
namespace {

TEST_F(CudaTest, TrainingTensorsRoundTripThroughTheDevice) {
  const Tensor host = random_tensor({4, 33}, 7);
  const Tensor back = on_cpu(on_gpu(host));
  EXPECT_EQ(scaled_error(back, host), 0.0);
}

}  // namespace
}  // namespace tach::test
