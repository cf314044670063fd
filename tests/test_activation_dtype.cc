// What a forward's activations are in (model/activation_dtype.h) and what its costs count at: the
// CPU keeps f32 activations whatever the compute dtype; the notes say what a GPU does; a bf16
// forward's declared bytes are smaller than an f32 one's for the same FLOPs.
#include <gtest/gtest.h>

#include <cstdlib>

#include "model/activation_dtype.h"
#include "model/decoder.h"
#include "model/decoder_config.h"
#include "model/encoder.h"
#include "ops/linear.h"
#include "test_util.h"

namespace tach {
namespace {

TEST(ActivationDtype, TheCpuKeepsF32ActivationsForEveryComputeDtype) {
  Tensor w = Tensor::zeros({8, 16}, DType::f32);
  for (DType compute : {DType::f32, DType::bf16, DType::i8}) {
    const ops::Linear linear(w, Tensor(), {Device::cpu(), compute});
    EXPECT_EQ(linear.activation_dtype(), DType::f32) << dtype_name(compute);
    EXPECT_EQ(model::inference_activations(linear), DType::f32) << dtype_name(compute);
  }
}

TEST(ActivationDtype, NotesSayWhatAGpuRunsAndNothingOnTheCpu) {
  EXPECT_EQ(model::activations_note(DType::bf16, DType::f32, Device::cpu()), "");
  EXPECT_EQ(model::activations_note(DType::f32, DType::f32, Device::cuda(0)), "");
  const std::string bf16 = model::activations_note(DType::bf16, DType::bf16, Device::cuda(0));
  EXPECT_NE(bf16.find("bf16 activations end to end"), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("accumulate in f32"), std::string::npos) << bf16;
  const std::string f16 = model::activations_note(DType::f16, DType::f16, Device::cuda(0));
  EXPECT_NE(f16.find("f16 activations end to end"), std::string::npos) << f16;
  const std::string asked = model::activations_note(DType::bf16, DType::f32, Device::cuda(0));
  EXPECT_NE(asked.find("TACH_GPU_ACTIVATIONS=f32"), std::string::npos) << asked;
}

TEST(ActivationDtype, AsF32KeepsAnF32TensorAndCastsA16BitOne) {
  Tensor f = Tensor::zeros({2, 3}, DType::f32);
  EXPECT_EQ(model::as_f32(f).raw(), f.raw());  // no copy
  Tensor h = Tensor::zeros({2, 3}, DType::f32);
  for (int i = 0; i < 6; ++i) h.data<float>()[i] = 1.0f + float(i) / 3.0f;
  const Tensor b = h.to(DType::bf16);
  const Tensor back = model::as_f32(b);
  ASSERT_EQ(back.dtype(), DType::f32);
  const Tensor want = b.to(DType::f32);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back.data<float>()[i], want.data<float>()[i]) << i;
}

// The declared cost of a bf16 forward: the same FLOPs, fewer bytes (weights and activations at 2
// bytes, the output cast to f32 counted).
TEST(ActivationDtype, CostsCountBytesAtTheForwardsDtypes) {
  const model::DecoderConfig c =
      model::load_decoder_config(test::fixtures_dir() + "/decoders/llama-lm-yarn-bf16/config.json");
  const ops::OpCost f32 = model::decoder_cost(c, 2, 16, 0);
  const ops::OpCost bf16 = model::decoder_cost(c, 2, 16, 0, false, {DType::bf16, DType::bf16, DType::bf16});
  const ops::OpCost mixed = model::decoder_cost(c, 2, 16, 0, false, {DType::bf16, DType::bf16, DType::f32});
  EXPECT_LT(bf16.bytes(), mixed.bytes());
  EXPECT_LT(mixed.bytes(), f32.bytes());
  EXPECT_NEAR(bf16.flops, f32.flops, 1e-6 * f32.flops);

  model::EncoderShape s;
  s.layers = 2, s.hidden = 32, s.heads = 4, s.intermediate = 64, s.vocab = 100, s.max_positions = 64;
  const ops::OpCost e32 = model::encoder_cost(s, 2, 16);
  s.compute = s.embeddings = s.activations = DType::bf16;
  const ops::OpCost e16 = model::encoder_cost(s, 2, 16);
  EXPECT_LT(e16.bytes(), e32.bytes());
  EXPECT_NEAR(e16.flops, e32.flops, 1e-6 * e32.flops);
}

TEST(ActivationDtype, KvCacheBytesFollowTheCachesDtype) {
  const model::DecoderConfig c =
      model::load_decoder_config(test::fixtures_dir() + "/decoders/llama-lm-yarn-bf16/config.json");
  EXPECT_EQ(model::kv_cache_bytes(c, 2, 10, DType::bf16) * 2, model::kv_cache_bytes(c, 2, 10));
  const model::KvCache cache = model::make_kv_cache(c, 1, 4, Device::cpu(), DType::f32);
  EXPECT_EQ(cache.k.front().dtype(), DType::f32);
}

}  // namespace
}  // namespace tach
