// The masked mean (ops/masked_mean.h) on CUDA against its CPU kernel, same inputs: both sum each
// element's kept tokens in token order in f32 and divide by the same f32 count, so the results
// are equal bit for bit. A mask with holes and a row keeping one token; C not a multiple of the
// block; the backward's dx starts non-zero (it accumulates), the forward's out as NaN (it is
// overwritten). Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda_compare.h"
#include "ops/masked_mean.h"

namespace tach::test {
namespace {

class CudaTrainMaskedMean : public CudaTest {};

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// [B, T] i32: row b keeps the tokens t with (t + b) % (b + 2) != 0, and the last row one token.
Tensor holey_mask(int64_t B, int64_t T) {
  Tensor m = Tensor::zeros({B, T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      m.data<int32_t>()[b * T + t] = b + 1 == B ? (t == T / 2 ? 1 : 0) : ((t + b) % (b + 2) != 0 ? 1 : 0);
  return m;
}

TEST_F(CudaTrainMaskedMean, ForwardAndBackwardGiveTheCpusBits) {
  const int64_t B = 5, T = 77, C = 300;
  const Tensor mask = holey_mask(B, T), x = random_tensor({B * T, C}, 1, 2.0f), dout = random_tensor({B, C}, 2);
  Tensor want = Tensor::empty({B, C}, DType::f32);
  ops::masked_mean_forward(want, x, mask);
  Tensor got = Tensor::empty({B, C}, DType::f32, kGpu);
  poison(got);
  ops::masked_mean_forward(got, on_gpu(x), on_gpu(mask));
  EXPECT_TRUE(bitwise_equal(on_cpu(got), want)) << "forward: scaled error " << scaled_error(on_cpu(got), want);

  const Tensor dx0 = random_tensor({B * T, C}, 3);
  Tensor want_dx = dx0.to_device(Device::cpu());
  ops::masked_mean_backward(want_dx, dout, mask);
  Tensor got_dx = on_gpu(dx0);
  ops::masked_mean_backward(got_dx, on_gpu(dout), on_gpu(mask));
  EXPECT_TRUE(bitwise_equal(on_cpu(got_dx), want_dx))
      << "backward: scaled error " << scaled_error(on_cpu(got_dx), want_dx);
}

}  // namespace
}  // namespace tach::test
