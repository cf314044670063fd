// Inference attention in bf16 and f16 activations on CUDA (the activation contract): both ops,
// every branch (cuDNN's fused attention on the operands in place, tach's tiles and rows, the
// split-key decode with the cache length on the device), against the CPU's f32 kernel on the
// same inputs rounded to the dtype. Encoders: bidirectional with right padding, MPNet's bias, the
// first query row only, head sizes 64, 128 and 256; decoders: causal grouped-query prefill from
// the fused rows and from a cache, sliding windows, left padding, ModernBERT's bidirectional
// window, queries after a cache, decoding. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

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

using ops::CudaAttentionKernel;
using ops::InferAttentionFacts;
using ops::KeyPadding;

class CudaAttentionBf16 : public CudaTest {
 protected:
  void TearDown() override {
    ops::set_cuda_attention_kernel(CudaAttentionKernel::automatic);
    unsetenv("TACH_INFER_ATTENTION");
  }
};

// The cases cuDNN runs: skipped, saying why, where cuDNN 9 does not load.
class CudaAttentionBf16Cudnn : public CudaAttentionBf16 {
 protected:
  void SetUp() override {
    CudaAttentionBf16::SetUp();
    if (IsSkipped()) return;
#if TACH_HAS_CUDA
    std::string why;
    if (!cuda::cudnn_sdpa_available(&why)) GTEST_SKIP() << why;
#endif
  }
};

// cuDNN takes head sizes above 128 from 9.10 on (ops/infer_attention_kernel.h); tach's rows below.
bool cudnn_takes(int64_t head_size) {
#if TACH_HAS_CUDA
  return head_size <= 128 || cuda::cudnn_version() >= 91000;
#else
  return head_size <= 128;
#endif
}

// Tolerances, as the largest error over the largest reference value. The reference sees the same
// rounded inputs, so tach's kernels differ from it by the f32 summation order (about 1e-5) and the
// one rounding of each output to the dtype: half a unit in the last place, at most 2^-8 of the
// value for bf16 (8 significant bits: 3.9e-3) and 2^-11 for f16 (11: 4.9e-4). 6e-3 and 1e-3 leave
// room for that and no more (a wrong mask moves an output by the order of the values themselves).
// cuDNN also rounds the probabilities to the dtype before P·V (the test_cuda_infer_attention
// bounds): 3e-2 for bf16, 5e-3 for f16.
double tolerance(DType dtype, const std::string& kernels) {
  const bool cudnn = kernels.find("cudnn") != std::string::npos;
  if (dtype == DType::bf16) return cudnn ? 3e-2 : 6e-3;
  return cudnn ? 5e-3 : 1e-3;
}

// x rounded to `dtype` (to nearest even), as the GPU gets it, and back to f32 for the reference.
Tensor rounded(const Tensor& x, DType dtype) { return x.to(dtype).to(DType::f32); }

// A device tensor of NaNs in `dtype`, so that an element a kernel leaves unwritten shows.
Tensor poisoned(const Shape& shape, DType dtype) {
  Tensor nan = Tensor::empty(shape, DType::f32);
  for (int64_t i = 0; i < nan.numel(); ++i) nan.data<float>()[i] = NAN;
  return nan.to(dtype).to_device(kGpu);
}

template <typename Call>
std::string kernels_of(Call call) {
  const uint64_t mark = ops::infer_attention_mark();
  call();
  return ops::infer_attention_kernels_since(mark);
}

std::string name(DType dtype) { return std::string(dtype_name(dtype)); }

// An encoder layer's attention: q, k, v column blocks of one fused [B, T, 3C] buffer.
struct EncoderCase {
  DType dtype;
  int64_t B, T, H, D;
  bool padded = true;   // right padding: row b keeps T - 5b keys
  bool biased = false;  // MPNet's relative position bias
  int64_t Tq = -1;      // the first Tq query rows only (a classifier's last layer)
  std::string describe() const {
    return name(dtype) + " B" + std::to_string(B) + " T" + std::to_string(T) + " " + std::to_string(H) + "x" +
           std::to_string(D) + (padded ? " padded" : "") + (biased ? " biased" : "") +
           (Tq > 0 ? " Tq" + std::to_string(Tq) : "");
  }
};

// The error against the CPU's f32 kernel; *kernels: what ran.
double encoder_error(const EncoderCase& c, std::string* kernels) {
  const int64_t C = c.H * c.D, Tq = c.Tq > 0 ? c.Tq : c.T;
  const Tensor qkv = rounded(random_tensor({c.B, c.T, 3 * C}, 500 + unsigned(c.T + c.D)), c.dtype);
  Tensor mask;
  if (c.padded) {
    mask = Tensor::zeros({c.B, c.T}, DType::i32);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < std::max<int64_t>(1, c.T - 5 * b); ++t) mask.data<int32_t>()[b * c.T + t] = 1;
  }
  Tensor table, buckets;
  if (c.biased) {
    table = random_tensor({32, c.H}, 77, 0.5f);
    const std::vector<int32_t> bk = ops::relative_position_buckets(c.T, 32, 128);
    buckets = Tensor::empty({c.T, c.T}, DType::i32);
    std::copy(bk.begin(), bk.end(), buckets.data<int32_t>());
  }
  const float scale = 1.0f / std::sqrt(float(c.D));
  Tensor want = Tensor::empty({c.B, Tq, C}, DType::f32);
  ops::attention_forward(want, qkv.narrow(2, 0, C).narrow(1, 0, Tq), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask,
                         int(c.H), scale, table, buckets);
  const Tensor g = qkv.to(c.dtype).to_device(kGpu);
  const Tensor gm = mask.defined() ? on_gpu(mask) : Tensor();
  const Tensor gt = table.defined() ? on_gpu(table) : Tensor(), gb = buckets.defined() ? on_gpu(buckets) : Tensor();
  Tensor got = poisoned({c.B, Tq, C}, c.dtype);
  *kernels = kernels_of([&] {
    ops::attention_forward(got, g.narrow(2, 0, C).narrow(1, 0, Tq), g.narrow(2, C, C), g.narrow(2, 2 * C, C), gm,
                           int(c.H), scale, gt, gb,
                           InferAttentionFacts{c.dtype, c.padded ? KeyPadding::right : KeyPadding::none});
  });
  EXPECT_EQ(got.dtype(), c.dtype);
  return scaled_error(on_cpu(got).to(DType::f32), want);
}

TEST_F(CudaAttentionBf16Cudnn, EncoderThroughCudnnInPlaceMatchesTheCpu) {
  for (const DType dtype : {DType::bf16, DType::f16})
    for (const EncoderCase& c :
         {EncoderCase{dtype, 4, 128, 12, 64}, EncoderCase{dtype, 3, 37, 4, 128}, EncoderCase{dtype, 2, 64, 2, 256},
          EncoderCase{dtype, 2, 48, 4, 64, false}, EncoderCase{dtype, 3, 40, 4, 64, true, false, 1}}) {
      SCOPED_TRACE(c.describe());
      std::string kernels;
      const double err = encoder_error(c, &kernels);
      if (cudnn_takes(c.D)) { EXPECT_EQ(kernels, ops::cudnn_attention_words(dtype)); }
      EXPECT_LT(err, tolerance(dtype, kernels));
    }
}

TEST_F(CudaAttentionBf16, EncoderThroughTachsTilesAndRowsMatchesTheCpu) {
  setenv("TACH_INFER_ATTENTION", "tach", 1);
  for (const DType dtype : {DType::bf16, DType::f16})
    for (const CudaAttentionKernel kernel : {CudaAttentionKernel::tiles, CudaAttentionKernel::rows})
      for (const EncoderCase& c :
           {EncoderCase{dtype, 3, 70, 4, 64}, EncoderCase{dtype, 2, 33, 2, 128}, EncoderCase{dtype, 2, 40, 2, 256},
            EncoderCase{dtype, 3, 40, 4, 64, true, true}, EncoderCase{dtype, 3, 40, 4, 32, true, false, 1}}) {
        if (kernel == CudaAttentionKernel::tiles && c.D > 128) continue;  // the tiles stop at 128 (rows take 256)
        SCOPED_TRACE(c.describe() + (kernel == CudaAttentionKernel::tiles ? " tiles" : " rows"));
        ops::set_cuda_attention_kernel(kernel);
        std::string kernels;
        const double err = encoder_error(c, &kernels);
        const std::string want = ops::tach_attention_words(
            kernel == CudaAttentionKernel::tiles ? ops::TachAttentionKernel::tiles : ops::TachAttentionKernel::rows,
            dtype);
        EXPECT_EQ(kernels.rfind(want + " (", 0), 0u) << kernels;
        EXPECT_LT(err, tolerance(dtype, kernels));
      }
}

TEST_F(CudaAttentionBf16, EncoderWithMpnetBiasMatchesTheCpu) {
  for (const DType dtype : {DType::bf16, DType::f16}) {
    const EncoderCase c{dtype, 3, 64, 4, 64, true, true};
    SCOPED_TRACE(c.describe());
    std::string kernels;
    const double err = encoder_error(c, &kernels);
    EXPECT_LT(err, tolerance(dtype, kernels)) << kernels;
  }
}

// A decoder's (or ModernBERT's) attention: the new rows' fused q|k|v [B, Tq, (H + 2 KVH) D], with k
// and v from those rows or from a key/value cache [B, capacity, KVH D] holding `past` earlier rows.
struct CausalCase {
  DType dtype;
  int64_t B, past, Tq, H, KVH, D;
  bool cache = false;        // k, v read from the cache (always when past > 0)
  bool causal = true;        // false: bidirectional (ModernBERT)
  int64_t window = 0;        // a sliding window
  bool left_padded = false;  // row b's first 3b keys are padding
  bool device_past = false;  // the cache length read on the device (a captured decoding step)
  std::string describe() const {
    return name(dtype) + " B" + std::to_string(B) + " past " + std::to_string(past) + " Tq" + std::to_string(Tq) + " " +
           std::to_string(H) + "/" + std::to_string(KVH) + "x" + std::to_string(D) + (cache ? " cache" : "") +
           (causal ? "" : " bidirectional") + (window ? " window " + std::to_string(window) : "") +
           (left_padded ? " left-padded" : "") + (device_past ? " device past" : "");
  }
};

double causal_error(const CausalCase& c, std::string* kernels) {
  const int64_t HD = c.H * c.D, KD = c.KVH * c.D, QKV = HD + 2 * KD, Tk = c.past + c.Tq, capacity = Tk + 3;
  const bool cache = c.cache || c.past > 0;
  const Tensor rows = rounded(random_tensor({c.B, c.Tq, QKV}, 600 + unsigned(Tk + c.D)), c.dtype);
  Tensor kc, vc;  // the cache: earlier rows random, then the new rows' k and v
  if (cache) {
    kc = rounded(random_tensor({c.B, capacity, KD}, 700 + unsigned(Tk)), c.dtype);
    vc = rounded(random_tensor({c.B, capacity, KD}, 800 + unsigned(Tk)), c.dtype);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < c.Tq; ++t)
        for (int64_t j = 0; j < KD; ++j) {
          const float* row = rows.data<float>() + (b * c.Tq + t) * QKV;
          kc.data<float>()[(b * capacity + c.past + t) * KD + j] = row[HD + j];
          vc.data<float>()[(b * capacity + c.past + t) * KD + j] = row[HD + KD + j];
        }
  }
  const int64_t mask_stride = cache ? capacity : c.Tq;
  Tensor mask = Tensor::zeros({c.B, mask_stride}, DType::i32);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < Tk; ++t) mask.data<int32_t>()[b * mask_stride + t] = !c.left_padded || t >= 3 * b;
  ops::CausalAttentionArgs a;
  a.B = c.B, a.Tq = c.Tq, a.past = c.past, a.H = c.H, a.KVH = c.KVH, a.D = c.D;
  a.ld_q = QKV, a.ld_out = HD, a.mask_stride = mask_stride, a.scale = 1.0f / std::sqrt(float(c.D));
  a.ld_kv = cache ? KD : QKV, a.batch_stride_kv = cache ? capacity * KD : c.Tq * QKV;
  a.causal = c.causal, a.window = c.window;
  Tensor want = Tensor::empty({c.B, c.Tq, HD}, DType::f32);
  const float* q = rows.data<float>();
  ops::causal_attention_forward(want.data<float>(), q, cache ? kc.data<float>() : q + HD,
                                cache ? vc.data<float>() : q + HD + KD, mask.data<int32_t>(), a);

  const size_t element = dtype_bytes(c.dtype, 1);
  const Tensor gq = rows.to(c.dtype).to_device(kGpu), gm = on_gpu(mask);
  const Tensor gk = cache ? kc.to(c.dtype).to_device(kGpu) : Tensor(),
               gv = cache ? vc.to(c.dtype).to_device(kGpu) : Tensor();
  const char* base = static_cast<const char*>(gq.raw());
  const void* kp = cache ? gk.raw() : base + size_t(HD) * element;
  const void* vp = cache ? gv.raw() : base + size_t(HD + KD) * element;
  Tensor past_on_device;
  if (c.device_past) {
    Tensor host = Tensor::empty({1}, DType::i32);
    host.data<int32_t>()[0] = int32_t(c.past);
    past_on_device = on_gpu(host);
    a.device_past = past_on_device.data<int32_t>();
  }
  Tensor got = poisoned({c.B, c.Tq, HD}, c.dtype);
  a.device = kGpu, a.dtype = c.dtype;
  a.facts = {c.dtype, c.left_padded ? KeyPadding::left : KeyPadding::none};
  *kernels = kernels_of([&] { ops::causal_attention_forward(got.raw(), gq.raw(), kp, vp, gm.data<int32_t>(), a); });
  return scaled_error(on_cpu(got).to(DType::f32), want);
}

TEST_F(CudaAttentionBf16Cudnn, CausalGroupedQueryPrefillThroughCudnnInPlaceMatchesTheCpu) {
  for (const DType dtype : {DType::bf16, DType::f16})
    for (const CausalCase& c : {CausalCase{dtype, 2, 0, 128, 14, 2, 64}, CausalCase{dtype, 3, 0, 67, 8, 2, 64, true},
                                CausalCase{dtype, 1, 0, 100, 4, 1, 128}, CausalCase{dtype, 2, 0, 40, 4, 2, 256}}) {
      SCOPED_TRACE(c.describe());
      std::string kernels;
      const double err = causal_error(c, &kernels);
      if (cudnn_takes(c.D)) { EXPECT_EQ(kernels, ops::cudnn_attention_words(dtype)); }
      EXPECT_LT(err, tolerance(dtype, kernels));
    }
}

// What cuDNN does not take (or, with its graphs extended, some of it: the tolerance follows what
// ran) and decoding, through tach's tiles and rows in the dtype.
TEST_F(CudaAttentionBf16, CausalCasesOutsideCudnnMatchTheCpu) {
  for (const DType dtype : {DType::bf16, DType::f16})
    for (const CausalCase& c : {
             CausalCase{dtype, 2, 0, 90, 8, 2, 64, false, true, 32},               // a sliding window
             CausalCase{dtype, 3, 0, 50, 8, 2, 64, false, true, 0, true},          // left padding
             CausalCase{dtype, 2, 0, 80, 4, 4, 64, false, false, 16, true},        // ModernBERT's local layer
             CausalCase{dtype, 2, 20, 4, 8, 2, 128},                               // queries after a cache
             CausalCase{dtype, 3, 300, 1, 14, 2, 64, true, true, 0, true},         // decoding, left-padded
             CausalCase{dtype, 2, 200, 1, 8, 1, 128, true, true, 0, false, true},  // decoding, device past
             CausalCase{dtype, 2, 150, 1, 8, 2, 256, true, true, 64},              // decoding in a window
         })
      for (const CudaAttentionKernel kernel : {CudaAttentionKernel::tiles, CudaAttentionKernel::rows}) {
        if (kernel == CudaAttentionKernel::tiles && (c.D > 128 || c.device_past)) continue;  // rows only there
        SCOPED_TRACE(c.describe() + (kernel == CudaAttentionKernel::tiles ? " tiles" : " rows"));
        ops::set_cuda_attention_kernel(kernel);
        std::string kernels;
        const double err = causal_error(c, &kernels);
        EXPECT_NE(kernels.find(name(dtype)), std::string::npos) << kernels;  // what ran names the dtype
        EXPECT_LT(err, tolerance(dtype, kernels)) << kernels;
      }
}

}  // namespace
}  // namespace tach::test
