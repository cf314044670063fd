// Inference attention through cuDNN's fused attention (a bf16 or f16 model on CUDA,
// ops/infer_attention_kernel.h) against the CPU's f32 reference: encoders' bidirectional attention
// with right padding, decoders' causal grouped-query prefill (from the fused q|k|v buffer and from
// a key/value cache's rows), left-padded prompts (ragged offsets) and sliding windows, and the
// cases that keep tach's kernels (f32 models, a mask not known to be padded on one side,
// TACH_INFER_ATTENTION=tach), each checked by what the run records as having run. Skips without a
// GPU or cuDNN 9; the graphs' acceptance by cuDNN (bias, windows, ragged offsets included) and
// their arguments' checks run without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "cuda_compare.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "ops/infer_attention_kernel.h"
#include "tach/error.h"

#if TACH_HAS_CUDA
#include "cuda/cudnn_loader.h"
#include "cuda/cudnn_sdpa.h"
#endif

namespace tach::test {
namespace {

using ops::InferAttentionFacts;
using ops::KeyPadding;

// Skips without a GPU (CudaTest) or without cuDNN 9, saying which.
class CudaInferCudnn : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
#if TACH_HAS_CUDA
    std::string why;
    if (!cuda::cudnn_sdpa_available(&why)) GTEST_SKIP() << why;
#endif
  }
};

// Tolerance against the f32 reference, as the largest error over the largest reference value:
// cuDNN sees q, k and v rounded to bf16 (8 significant bits: 2^-9 relative each), so each score
// moves by about 2^-8 of its size; the probabilities enter P·V in bf16 and the output is rounded to
// bf16 before it comes back to f32: a few roundings of 2^-9 of the values' scale, summed over the
// keys with random signs. 3e-2 leaves room for that and no more (an error of a whole masked key is
// of the order of the values themselves). f16 has 11 significant bits: eight times less, 5e-3.
double tolerance(DType dtype) { return dtype == DType::bf16 ? 3e-2 : 5e-3; }

// Right padding: row b keeps its first T - 3 b keys (at least one).
Tensor right_padded_mask(int64_t B, int64_t T) {
  Tensor m = Tensor::zeros({B, T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < std::max<int64_t>(1, T - 3 * b); ++t) m.data<int32_t>()[b * T + t] = 1;
  return m;
}

// What ran, as the run records it, for one call.
template <typename Call>
std::string kernels_of(Call call) {
  const uint64_t mark = ops::infer_attention_mark();
  call();
  return ops::infer_attention_kernels_since(mark);
}

// An encoder layer's attention: q, k, v as column blocks of one fused [B, T, 3C] buffer.
struct EncoderCall {
  int64_t B, T, H, D;
  DType compute;
  bool padded;
};

double encoder_error(const EncoderCall& c, std::string* kernels, KeyPadding padding) {
  const int64_t C = c.H * c.D;
  const Tensor qkv = random_tensor({c.B, c.T, 3 * C}, 300 + unsigned(c.T));
  const Tensor mask = c.padded ? right_padded_mask(c.B, c.T) : Tensor();
  const float scale = 1.0f / std::sqrt(float(c.D));
  Tensor want = Tensor::empty({c.B, c.T, C}, DType::f32);
  ops::attention_forward(want, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask, int(c.H),
                         scale);
  const Tensor g = on_gpu(qkv);
  const Tensor gm = mask.defined() ? on_gpu(mask) : Tensor();
  Tensor got = Tensor::empty({c.B, c.T, C}, DType::f32, kGpu);
  *kernels = kernels_of([&] {
    ops::attention_forward(got, g.narrow(2, 0, C), g.narrow(2, C, C), g.narrow(2, 2 * C, C), gm, int(c.H), scale,
                           Tensor(), Tensor(), InferAttentionFacts{c.compute, padding});
  });
  return scaled_error(on_cpu(got), want);
}

TEST_F(CudaInferCudnn, EncoderWithRightPaddingMatchesTheCpu) {
  // DistilBERT's layer (12 x 64) at 128 tokens, odd lengths, a head of 128, both dtypes.
  for (const EncoderCall c :
       {EncoderCall{4, 128, 12, 64, DType::bf16, true}, EncoderCall{3, 37, 4, 64, DType::bf16, true},
        EncoderCall{2, 130, 2, 128, DType::f16, true}, EncoderCall{2, 64, 4, 32, DType::bf16, false}}) {
    SCOPED_TRACE(std::string(dtype_name(c.compute)) + " B" + std::to_string(c.B) + " T" + std::to_string(c.T) + " H" +
                 std::to_string(c.H) + " D" + std::to_string(c.D));
    std::string kernels;
    const double err = encoder_error(c, &kernels, c.padded ? KeyPadding::right : KeyPadding::none);
    EXPECT_EQ(kernels, ops::cudnn_attention_words(c.compute));
    EXPECT_LT(err, tolerance(c.compute));
  }
}

TEST_F(CudaInferCudnn, TachKernelsRunWhatCudnnDoesNotAndSayWhy) {
  std::string kernels;
  // An f32 model: tach's f32 kernels, to f32's tolerance.
  EXPECT_LT(encoder_error({2, 64, 4, 64, DType::f32, true}, &kernels, KeyPadding::right), kReductionTol);
  EXPECT_NE(kernels.find("the model computes in f32"), std::string::npos) << kernels;
  // A mask whose padding the caller did not say: tach's.
  EXPECT_LT(encoder_error({2, 64, 4, 64, DType::bf16, true}, &kernels, KeyPadding::unknown), kReductionTol);
  EXPECT_NE(kernels.find("not known to be right- or left-padded"), std::string::npos) << kernels;
  // Forced, for an A/B.
  setenv("TACH_INFER_ATTENTION", "tach", 1);
  const double forced = encoder_error({2, 64, 4, 64, DType::bf16, true}, &kernels, KeyPadding::right);
  unsetenv("TACH_INFER_ATTENTION");
  EXPECT_LT(forced, kReductionTol);
  EXPECT_NE(kernels.find("TACH_INFER_ATTENTION=tach"), std::string::npos) << kernels;
}

// A decoder's prefill: q from the fused q|k|v rows [B, T, (H + 2 KVH) D], k and v from those rows
// (no cache) or from a key/value cache of `capacity` rows per sequence (the first call into it).
struct CausalCall {
  int64_t B, T, H, KVH, D;
  DType compute;
  bool cache;
};

double causal_error(const CausalCall& c, std::string* kernels, KeyPadding padding, const Tensor& mask_in = Tensor(),
                    int64_t window = 0) {
  const int64_t HD = c.H * c.D, KD = c.KVH * c.D, QKV = HD + 2 * KD, capacity = c.T + 5;
  const Tensor qkv = random_tensor({c.B, c.T, QKV}, 400 + unsigned(c.T));
  ops::CausalAttentionArgs a;
  a.B = c.B, a.Tq = c.T, a.H = c.H, a.KVH = c.KVH, a.D = c.D;
  a.ld_q = QKV, a.ld_out = HD, a.scale = 1.0f / std::sqrt(float(c.D)), a.window = window;
  Tensor k, v;  // [B, capacity, KD] when cached
  const float *kp = nullptr, *vp = nullptr;
  if (c.cache) {
    k = Tensor::zeros({c.B, capacity, KD}, DType::f32), v = Tensor::zeros({c.B, capacity, KD}, DType::f32);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < c.T; ++t)
        for (int64_t j = 0; j < KD; ++j) {
          const float* row = qkv.data<float>() + (b * c.T + t) * QKV;
          k.data<float>()[(b * capacity + t) * KD + j] = row[HD + j];
          v.data<float>()[(b * capacity + t) * KD + j] = row[HD + KD + j];
        }
    a.ld_kv = KD, a.batch_stride_kv = capacity * KD;
  } else {
    a.ld_kv = QKV, a.batch_stride_kv = c.T * QKV;
  }
  const int64_t mask_stride = c.cache ? capacity : c.T;
  Tensor mask = Tensor::zeros({c.B, mask_stride}, DType::i32);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t)
      mask.data<int32_t>()[b * mask_stride + t] = mask_in.defined() ? mask_in.data<int32_t>()[b * c.T + t] : 1;
  a.mask_stride = mask_stride;
  const float* q = qkv.data<float>();
  Tensor want = Tensor::empty({c.B, c.T, HD}, DType::f32);
  ops::causal_attention_forward(want.data<float>(), q, c.cache ? k.data<float>() : q + HD,
                                c.cache ? v.data<float>() : q + HD + KD, mask.data<int32_t>(), a);
  const Tensor gq = on_gpu(qkv), gm = on_gpu(mask);
  Tensor gk, gv;
  if (c.cache) gk = on_gpu(k), gv = on_gpu(v);
  kp = c.cache ? gk.data<float>() : gq.data<float>() + HD;
  vp = c.cache ? gv.data<float>() : gq.data<float>() + HD + KD;
  Tensor got = Tensor::empty({c.B, c.T, HD}, DType::f32, kGpu);
  poison(got);
  a.device = kGpu;
  a.facts = {c.compute, padding};
  *kernels = kernels_of(
      [&] { ops::causal_attention_forward(got.data<float>(), gq.data<float>(), kp, vp, gm.data<int32_t>(), a); });
  return scaled_error(on_cpu(got), want);
}

TEST_F(CudaInferCudnn, CausalGroupedQueryPrefillMatchesTheCpu) {
  // Qwen2.5-0.5B's layer (14 heads on 2 of 64), Llama's 8 on 2 with a cache's rows, multi-query, f16.
  for (const CausalCall c :
       {CausalCall{2, 128, 14, 2, 64, DType::bf16, false}, CausalCall{3, 67, 8, 2, 64, DType::bf16, true},
        CausalCall{1, 100, 4, 1, 128, DType::f16, false}}) {
    SCOPED_TRACE(std::string(dtype_name(c.compute)) + " B" + std::to_string(c.B) + " T" + std::to_string(c.T) + " " +
                 std::to_string(c.H) + "/" + std::to_string(c.KVH) + " D" + std::to_string(c.D) +
                 (c.cache ? " cache" : ""));
    std::string kernels;
    const double err = causal_error(c, &kernels, KeyPadding::none);
    EXPECT_EQ(kernels, ops::cudnn_attention_words(c.compute));
    EXPECT_LT(err, tolerance(c.compute));
  }
}

// A left-padded prompt: cuDNN starts each row at its first real token (ragged offsets), or, where
// its version and GPU do not take them, tach's kernels say so. The padded rows get zeros either way.
TEST_F(CudaInferCudnn, LeftPaddedPromptsMatchTheCpu) {
  const int64_t B = 3, T = 40;
  Tensor mask = Tensor::zeros({B, T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) mask.data<int32_t>()[b * T + t] = t >= 7 * b;
  for (const bool cache : {false, true}) {
    SCOPED_TRACE(cache ? "cache" : "fused rows");
    std::string kernels;
    const double err = causal_error({B, T, 8, 2, 64, DType::bf16, cache}, &kernels, KeyPadding::left, mask);
    const bool cudnn = kernels == ops::cudnn_attention_words(DType::bf16);
    EXPECT_TRUE(cudnn || kernels.find("left padding") != std::string::npos) << kernels;
    EXPECT_LT(err, cudnn ? tolerance(DType::bf16) : kReductionTol) << kernels;
  }
}

// A sliding window shorter than the prompt (Mistral's, Gemma's local layers) through cuDNN's band.
TEST_F(CudaInferCudnn, CausalSlidingWindowMatchesTheCpu) {
  const CausalCall c{2, 96, 8, 2, 64, DType::bf16, false};
  for (const int64_t window : {int64_t(16), int64_t(50)}) {
    SCOPED_TRACE("window " + std::to_string(window));
    std::string kernels;
    const double err = causal_error(c, &kernels, KeyPadding::none, Tensor(), window);
    const bool cudnn = kernels == ops::cudnn_attention_words(DType::bf16);
    EXPECT_TRUE(cudnn || kernels.find("sliding window") != std::string::npos) << kernels;
    EXPECT_LT(err, cudnn ? tolerance(DType::bf16) : kReductionTol) << kernels;
  }
}

// cuDNN finalizes each tensor and operation descriptor when it is built, and (9.19 on) the graph:
// no device needed, so the inference graphs the GPU tests run are checked here too.
class CudaInferCudnnLoader : public ::testing::Test {};

TEST_F(CudaInferCudnnLoader, InferenceGraphsAreAccepted) {
#if TACH_HAS_CUDA
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  struct Variant {
    int64_t H, H_kv, D;
    bool causal, padded;
    cuda::SdpaDType dtype;
    int64_t window = 0;
    bool bias = false, ragged = false, cache = false;  // cache: k, v in a cache's rows (in place)
  };
  for (const Variant v :
       {Variant{12, 12, 64, false, true, cuda::SdpaDType::bf16},
        Variant{12, 12, 64, false, false, cuda::SdpaDType::f16}, Variant{14, 2, 64, true, false, cuda::SdpaDType::bf16},
        Variant{8, 1, 128, true, true, cuda::SdpaDType::f16},
        // MPNet's bias, Mistral's causal window, ModernBERT's window on both sides, a left-padded
        // prompt (ragged offsets), and a prefill reading k and v from a cache.
        Variant{12, 12, 64, false, true, cuda::SdpaDType::bf16, 0, true},
        Variant{8, 2, 128, true, false, cuda::SdpaDType::bf16, 64},
        Variant{12, 12, 64, false, true, cuda::SdpaDType::bf16, 64},
        Variant{14, 2, 64, true, true, cuda::SdpaDType::bf16, 0, false, true},
        Variant{14, 2, 64, true, true, cuda::SdpaDType::f16, 32, false, true, true}}) {
    cuda::SdpaArgs a;
    a.B = 2, a.T = 128, a.H = v.H, a.H_kv = v.H_kv, a.D = v.D;
    a.ld_in = a.ld_kv = (v.H + 2 * v.H_kv) * v.D;  // the packed q|k|v rows
    if (v.cache) a.ld_kv = v.H_kv * v.D, a.kv_batch_stride = (a.T + 64) * a.ld_kv;
    a.ld_out = v.H * v.D;
    a.scale = 0.125f, a.causal = v.causal, a.dtype = v.dtype;
    a.window = v.window, a.bias = v.bias, a.ragged = v.ragged;
    SCOPED_TRACE("H " + std::to_string(v.H) + "/" + std::to_string(v.H_kv) + (v.causal ? " causal" : "") +
                 (v.padded ? " padded" : "") + (v.window ? " window" : "") + (v.bias ? " bias" : "") +
                 (v.ragged ? " ragged" : "") + (v.cache ? " cache" : ""));
    try {
      cuda::sdpa_check_operations(a, v.padded, false, /*stats=*/false);
    } catch (const Error& e) { ADD_FAILURE() << e.what(); }
  }
#else
  GTEST_SKIP() << "this tach was built without CUDA";
#endif
}

// The masks' arguments are checked by name before cuDNN sees them: windows, biases and left
// padding are the inference forward's, left padding needs each row's length.
TEST_F(CudaInferCudnnLoader, MaskArgumentsAreCheckedByName) {
#if TACH_HAS_CUDA
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  cuda::SdpaArgs a;
  a.B = 2, a.T = 64, a.H = a.H_kv = 4, a.D = 64, a.ld_in = 3 * 256, a.ld_out = 256, a.causal = true;
  const auto refused = [&](bool padded, bool backward, const std::string& part) {
    try {
      cuda::sdpa_check_operations(a, padded, backward, /*stats=*/backward);
      ADD_FAILURE() << "accepted; expected an error saying " << part;
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what(); }
  };
  a.ragged = true;
  refused(false, false, "left padding needs each sequence's real length");
  refused(true, true, "for the inference forward only");
  a.ragged = false, a.window = 16;
  refused(false, true, "for the inference forward only");
  a.window = -1;
  refused(false, false, "the window must be 0");
#else
  GTEST_SKIP() << "this tach was built without CUDA";
#endif
}

}  // namespace
}  // namespace tach::test
