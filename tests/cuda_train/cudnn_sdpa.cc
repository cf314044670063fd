// cuDNN's fused attention (src/cuda/cudnn_sdpa.*) against an f64 reference computed on the same
// bf16/f16-rounded inputs: forward (output and saved statistics) and backward, with key padding,
// causal masks, odd lengths and strided q|k|v views; its plan cache; its errors; and its time
// against tach's own f32 flash-attention kernel, printed to choose by (not asserted).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_compare.h"
#include "tach/error.h"

#if TACH_HAS_CUDA
#include "cuda/cudnn_loader.h"
#include "cuda/cudnn_sdpa.h"
#include "cuda/stream.h"
#include "ops/attention.h"
#endif

namespace tach::test {
namespace {

// Skips without a GPU (CudaTest) or without cuDNN 9, saying which.
class CudaTrainCudnn : public CudaTest {
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

// What needs no GPU: loading cuDNN (or the error naming it) and building the graphs' descriptors.
class CudaTrainCudnnLoader : public ::testing::Test {};

#if TACH_HAS_CUDA

struct Case {
  int64_t B, T, H, D;
  bool causal;
  std::vector<int32_t> lengths;  // real keys per sequence; empty: all T
  cuda::SdpaDType dtype;
};

// Odd lengths (37, 67, 130, 300), one sequence with a single real key, B = 1, head sizes 32, 64
// and 128, both masks alone and together, both dtypes.
const std::vector<Case> kCases = {
    {2, 37, 3, 64, false, {}, cuda::SdpaDType::bf16}, {3, 130, 2, 64, false, {130, 1, 77}, cuda::SdpaDType::bf16},
    {2, 100, 2, 128, true, {}, cuda::SdpaDType::f16}, {2, 67, 2, 64, true, {67, 20}, cuda::SdpaDType::bf16},
    {1, 300, 2, 32, false, {}, cuda::SdpaDType::f16},
};

std::string name(const Case& c) {
  std::string s = std::string(cuda::sdpa_dtype_name(c.dtype)) + " B" + std::to_string(c.B) + " T" +
                  std::to_string(c.T) + " H" + std::to_string(c.H) + " D" + std::to_string(c.D);
  if (c.causal) s += " causal";
  if (!c.lengths.empty()) s += " padded";
  return s;
}

DType dtype_of(cuda::SdpaDType t) { return t == cuda::SdpaDType::bf16 ? DType::bf16 : DType::f16; }

// Tolerances, as the largest error over the largest reference value. The inputs are the same
// rounded values on both sides, so the differences are cuDNN's roundings: the probabilities enter
// P·V in bf16/f16 (8 or 11 significant bits) and every output is rounded to it, so bf16 gives about
// 2^-8 of the values' scale per rounding and a sum of them; f16 four times less. The backward
// rounds P and dS before three more GEMMs and subtracts rowsum(dO∘O) from the rounded O: twice
// as loose. The statistics stay in f32 (their only error is f32 summation and exp/log): 1e-3.
double forward_tol(cuda::SdpaDType t) { return t == cuda::SdpaDType::bf16 ? 2e-2 : 5e-3; }
double backward_tol(cuda::SdpaDType t) { return t == cuda::SdpaDType::bf16 ? 5e-2 : 1.5e-2; }
constexpr double kStatsTol = 1e-3;

cuda::SdpaArgs args_of(const Case& c) {
  cuda::SdpaArgs a;
  a.B = c.B, a.T = c.T, a.H = c.H, a.D = c.D;
  a.ld_in = 3 * c.H * c.D;  // q, k, v: column blocks of one [B, T, 3C] buffer
  a.ld_out = c.H * c.D;
  a.scale = 1.0f / std::sqrt(float(c.D));
  a.causal = c.causal;
  a.dtype = c.dtype;
  return a;
}

// An f32 tensor rounded through dt, as the device sees it.
Tensor rounded(const Tensor& t, DType dt) { return t.to(dt).to(DType::f32); }
Tensor on_gpu_as(const Tensor& t, DType dt) { return t.to(dt).to_device(kGpu); }
Tensor back_as_f32(const Tensor& t) { return on_cpu(t).to(DType::f32); }
Tensor nan_on_gpu(const Shape& shape, DType dt) {
  Tensor t = Tensor::empty(shape, DType::f32);
  std::fill(t.data<float>(), t.data<float>() + t.numel(), NAN);
  return on_gpu_as(t, dt);
}

// Columns [first, first + n) of a [rows, cols] f32 tensor, as a contiguous [rows, n].
Tensor columns(const Tensor& t, int64_t first, int64_t n) {
  const int64_t cols = t.size(-1), rows = t.numel() / cols;
  Tensor out = Tensor::empty({rows, n}, DType::f32);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(t.data<float>() + r * cols + first, n, out.data<float>() + r * n);
  return out;
}

// Attention in f64, straight from the definition. qkv: [B, T, 3C] f32; dout: [B, T, C] f32 or
// undefined (forward only). out: [B, T, C], stats: [B, H, T], dqkv: [B, T, 3C].
struct Reference {
  Tensor out, stats, dqkv;
};
Reference reference(const Case& c, const Tensor& qkv, const Tensor& dout) {
  const int64_t B = c.B, T = c.T, H = c.H, D = c.D, C = H * D, ld = 3 * C;
  const double scale = 1.0 / std::sqrt(double(D));
  Reference r{Tensor::zeros({B, T, C}, DType::f32), Tensor::zeros({B, H, T}, DType::f32),
              Tensor::zeros({B, T, 3 * C}, DType::f32)};
  std::vector<double> dqkv(size_t(B * T * 3 * C), 0.0);
  const float* x = qkv.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t len = c.lengths.empty() ? T : c.lengths[size_t(b)];
        const int64_t keys = c.causal ? std::min(len, i + 1) : len;
        const float* q = x + (b * T + i) * ld + h * D;
        std::vector<double> s(static_cast<size_t>(keys)), p(static_cast<size_t>(keys));
        double m = -INFINITY;
        for (int64_t j = 0; j < keys; ++j) {
          const float* k = x + (b * T + j) * ld + C + h * D;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += double(q[d]) * double(k[d]);
          s[size_t(j)] = dot * scale;
          m = std::max(m, s[size_t(j)]);
        }
        double l = 0;
        for (int64_t j = 0; j < keys; ++j) l += (p[size_t(j)] = std::exp(s[size_t(j)] - m));
        for (double& pj : p) pj /= l;
        r.stats.data<float>()[(b * H + h) * T + i] = float(m + std::log(l));
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t j = 0; j < keys; ++j) o += p[size_t(j)] * double(x[(b * T + j) * ld + 2 * C + h * D + d]);
          r.out.data<float>()[(b * T + i) * C + h * D + d] = float(o);
        }
        if (!dout.defined()) continue;
        const float* g = dout.data<float>() + (b * T + i) * C + h * D;
        std::vector<double> dp(static_cast<size_t>(keys));
        double row_sum = 0;
        for (int64_t j = 0; j < keys; ++j) {
          const float* v = x + (b * T + j) * ld + 2 * C + h * D;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += double(g[d]) * double(v[d]);
          dp[size_t(j)] = dot;
          row_sum += p[size_t(j)] * dot;
        }
        for (int64_t j = 0; j < keys; ++j) {
          const double ds = p[size_t(j)] * (dp[size_t(j)] - row_sum) * scale;
          for (int64_t d = 0; d < D; ++d) {
            dqkv[size_t((b * T + i) * ld + h * D + d)] += ds * double(x[(b * T + j) * ld + C + h * D + d]);
            dqkv[size_t((b * T + j) * ld + C + h * D + d)] += ds * double(q[d]);
            dqkv[size_t((b * T + j) * ld + 2 * C + h * D + d)] += p[size_t(j)] * double(g[d]);
          }
        }
      }
  for (size_t n = 0; n < dqkv.size(); ++n) r.dqkv.data<float>()[n] = float(dqkv[n]);
  return r;
}

// One case's inputs: q|k|v as one [B, T, 3C] buffer (rounded to the case's dtype), dout, lengths.
struct Inputs {
  Tensor qkv, dout;          // f32 on the host, already rounded
  Tensor qkv_gpu, dout_gpu;  // in the case's dtype on the device
  Tensor lengths_gpu;        // [B] i32, or undefined
};
Inputs inputs(const Case& c, unsigned seed) {
  const DType dt = dtype_of(c.dtype);
  const int64_t C = c.H * c.D;
  Inputs in;
  in.qkv = rounded(random_tensor({c.B, c.T, 3 * C}, seed), dt);
  in.dout = rounded(random_tensor({c.B, c.T, C}, seed + 1), dt);
  in.qkv_gpu = on_gpu_as(in.qkv, dt);
  in.dout_gpu = on_gpu_as(in.dout, dt);
  if (!c.lengths.empty()) {
    Tensor lengths = Tensor::empty({c.B}, DType::i32);
    std::copy(c.lengths.begin(), c.lengths.end(), lengths.data<int32_t>());
    in.lengths_gpu = on_gpu(lengths);
  }
  return in;
}

const int32_t* lengths_of(const Inputs& in) {
  return in.lengths_gpu.defined() ? in.lengths_gpu.data<int32_t>() : nullptr;
}

// The element offset of q, k or v (0, 1, 2) in the fused buffer, as a device pointer.
const void* block(const Tensor& qkv, int which, const Case& c) {
  return static_cast<const char*>(qkv.raw()) + which * c.H * c.D * int64_t(dtype_bytes(qkv.dtype(), 1));
}
void* block(Tensor& qkv, int which, const Case& c) {
  return static_cast<char*>(qkv.raw()) + which * c.H * c.D * int64_t(dtype_bytes(qkv.dtype(), 1));
}

struct Forward {
  Tensor out, stats;  // on the device
};
Forward run_forward(const Case& c, const Inputs& in) {
  Forward f{nan_on_gpu({c.B, c.T, c.H * c.D}, dtype_of(c.dtype)), Tensor()};
  f.stats = Tensor::empty({c.B, c.H, c.T}, DType::f32);
  std::fill(f.stats.data<float>(), f.stats.data<float>() + f.stats.numel(), NAN);
  f.stats = on_gpu(f.stats);
  cuda::sdpa_forward(0, args_of(c), f.out.raw(), f.stats.data<float>(), block(in.qkv_gpu, 0, c),
                     block(in.qkv_gpu, 1, c), block(in.qkv_gpu, 2, c), lengths_of(in));
  return f;
}

TEST_F(CudaTrainCudnn, ForwardMatchesTheReference) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const Inputs in = inputs(c, 11);
    const Reference want = reference(c, in.qkv, Tensor());
    const Forward got = run_forward(c, in);
    EXPECT_LT(scaled_error(back_as_f32(got.out), want.out), forward_tol(c.dtype));
    EXPECT_LT(scaled_error(on_cpu(got.stats), want.stats), kStatsTol);
  }
}

TEST_F(CudaTrainCudnn, BackwardMatchesTheReference) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const Inputs in = inputs(c, 23);
    const Reference want = reference(c, in.qkv, in.dout);
    const Forward f = run_forward(c, in);
    Tensor dqkv = nan_on_gpu({c.B, c.T, 3 * c.H * c.D}, dtype_of(c.dtype));
    cuda::sdpa_backward(0, args_of(c), block(dqkv, 0, c), block(dqkv, 1, c), block(dqkv, 2, c), in.dout_gpu.raw(),
                        f.out.raw(), f.stats.data<float>(), block(in.qkv_gpu, 0, c), block(in.qkv_gpu, 1, c),
                        block(in.qkv_gpu, 2, c), lengths_of(in));
    const Tensor got = back_as_f32(dqkv);
    const int64_t C = c.H * c.D;
    const char* names[] = {"dq", "dk", "dv"};
    for (int which = 0; which < 3; ++which) {
      SCOPED_TRACE(names[which]);
      EXPECT_LT(scaled_error(columns(got, which * C, C), columns(want.dqkv, which * C, C)), backward_tol(c.dtype));
    }
  }
}

// A second shape between two calls of the first: the cache keys plans by shape, so the first
// shape's results come back bit for bit.
TEST_F(CudaTrainCudnn, PlansAreCachedPerShape) {
  const Case& a = kCases[1];
  const Case& b = kCases[0];
  const Inputs in_a = inputs(a, 5), in_b = inputs(b, 6);
  const Tensor first = back_as_f32(run_forward(a, in_a).out);
  run_forward(b, in_b);
  const Tensor again = back_as_f32(run_forward(a, in_a).out);
  ASSERT_EQ(first.numel(), again.numel());
  EXPECT_TRUE(std::equal(first.data<float>(), first.data<float>() + first.numel(), again.data<float>(),
                         [](float x, float y) { return std::memcmp(&x, &y, sizeof(x)) == 0; }));
}

TEST_F(CudaTrainCudnn, BadArgumentsAreClearErrors) {
  Case c = kCases[0];
  const Inputs in = inputs(c, 3);
  Forward f{nan_on_gpu({c.B, c.T, c.H * c.D}, dtype_of(c.dtype)), on_gpu(Tensor::zeros({c.B, c.H, c.T}, DType::f32))};
  cuda::SdpaArgs bad_head = args_of(c);
  bad_head.D = 60, bad_head.ld_in = 3 * c.H * 60, bad_head.ld_out = c.H * 60;
  try {
    cuda::sdpa_forward(0, bad_head, f.out.raw(), f.stats.data<float>(), block(in.qkv_gpu, 0, c),
                       block(in.qkv_gpu, 1, c), block(in.qkv_gpu, 2, c), nullptr);
    ADD_FAILURE() << "head size 60 was accepted";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("multiples of 8"), std::string::npos) << e.what(); }
  try {  // q one element (2 bytes) past an aligned address
    cuda::sdpa_forward(0, args_of(c), f.out.raw(), f.stats.data<float>(),
                       static_cast<const char*>(block(in.qkv_gpu, 0, c)) + 2, block(in.qkv_gpu, 1, c),
                       block(in.qkv_gpu, 2, c), nullptr);
    ADD_FAILURE() << "a misaligned q was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q must be 16-byte aligned"), std::string::npos) << e.what();
  }
}

// The median of `runs` timed calls (after two untimed), in ms of GPU time.
template <typename Fn>
double median_ms(Fn&& fn, int runs = 10) {
  fn();
  fn();
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    cuda::Event start(0), end(0);
    start.record();
    fn();
    end.record();
    ms.push_back(cuda::Event::elapsed_ms(start, end));
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// DistilBERT's attention (B 32, H 12, D 64) at T 128, 512 and 2048: tach's f32 flash-attention
// kernel (inference forward) against cuDNN's bf16 forward and backward. Printed, not asserted:
// the numbers are for choosing a kernel, and timings on a shared GPU are no test.
TEST_F(CudaTrainCudnn, TimeAgainstTheFlashAttentionKernelIsPrinted) {
  std::printf("cuDNN %lld; median of 10 calls, GPU time\n", static_cast<long long>(cuda::cudnn_version()));
  for (const int64_t T : {128, 512, 2048}) {
    const Case c{32, T, 12, 64, false, {}, cuda::SdpaDType::bf16};
    const int64_t C = c.H * c.D;
    const Inputs in = inputs(c, 7);
    const Tensor qkv32 = on_gpu(in.qkv);
    Tensor out32 = Tensor::empty({c.B, c.T, C}, DType::f32, kGpu);
    const float scale = 1.0f / std::sqrt(float(c.D));
    const double flash = median_ms([&] {
      ops::attention_forward(out32, qkv32.narrow(2, 0, C), qkv32.narrow(2, C, C), qkv32.narrow(2, 2 * C, C), Tensor(),
                             int(c.H), scale);
    });
    Forward f = run_forward(c, in);
    const double fwd = median_ms([&] {
      cuda::sdpa_forward(0, args_of(c), f.out.raw(), f.stats.data<float>(), block(in.qkv_gpu, 0, c),
                         block(in.qkv_gpu, 1, c), block(in.qkv_gpu, 2, c), nullptr);
    });
    Tensor dqkv = Tensor::empty({c.B, c.T, 3 * C}, DType::bf16, kGpu);
    const double bwd = median_ms([&] {
      cuda::sdpa_backward(0, args_of(c), block(dqkv, 0, c), block(dqkv, 1, c), block(dqkv, 2, c), in.dout_gpu.raw(),
                          f.out.raw(), f.stats.data<float>(), block(in.qkv_gpu, 0, c), block(in.qkv_gpu, 1, c),
                          block(in.qkv_gpu, 2, c), nullptr);
    });
    // Forward: two GEMMs of 2·T·T·D flops per head; backward: five.
    const double fwd_flop = 4.0 * double(c.B * c.H) * double(T * T) * double(c.D);
    std::printf(
        "attention B 32 H 12 T %lld D 64: tach flash f32 forward %.3f ms (%.1f TFLOP/s) | cuDNN bf16 forward %.3f ms "
        "(%.1f TFLOP/s, %.1fx) backward %.3f ms (%.1f TFLOP/s)\n",
        static_cast<long long>(T), flash, fwd_flop / flash * 1e-9, fwd, fwd_flop / fwd * 1e-9, flash / fwd, bwd,
        2.5 * fwd_flop / bwd * 1e-9);
    // The two kernels agree on these inputs (bf16's tolerance: cuDNN rounds P and out).
    EXPECT_LT(scaled_error(back_as_f32(f.out), on_cpu(out32)), forward_tol(c.dtype));
  }
}

TEST_F(CudaTrainCudnnLoader, LoadsOrSaysWhereItLooked) {
  std::string why;
  if (cuda::cudnn_loadable(&why)) {
    EXPECT_GE(cuda::cudnn_version(), 90000);
    EXPECT_TRUE(why.empty()) << why;
  } else {
    EXPECT_NE(why.find(cuda::kCudnnLibrary), std::string::npos) << why;
    EXPECT_EQ(cuda::cudnn_version(), 0);
    // What a user does about it.
    if (TACH_HAS_CUDNN_HEADERS) { EXPECT_NE(why.find("LD_LIBRARY_PATH"), std::string::npos) << why; }
  }
}

// cuDNN finalizes each tensor and operation descriptor when it is built, checking its attributes
// (types, shapes that agree, what each operation needs), and that takes no device: every graph
// the GPU tests run is built here too.
TEST_F(CudaTrainCudnnLoader, EveryGraphsOperationsAreAccepted) {
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    for (const bool backward : {false, true}) {
      for (const bool padded : {false, true}) {
        try {
          cuda::sdpa_check_operations(args_of(c), padded, backward);
        } catch (const Error& e) {
          ADD_FAILURE() << (backward ? "backward" : "forward") << (padded ? " padded" : "") << ": " << e.what();
        }
      }
    }
  }
}

// The graphs the training attention ops add: grouped-query K/V (8 query heads on 2 K/V heads, as
// Llama's and Qwen's; and 1, multi-query) with K/V rows of their own stride, and dropout with the
// caller's keep mask (BERT's attention_probs_dropout_prob), each alone and with padding and the
// causal mask.
TEST_F(CudaTrainCudnnLoader, GroupedQueryAndDropoutGraphsAreAccepted) {
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  struct Variant {
    int64_t H, H_kv;
    float dropout;
    bool causal;
  };
  for (const Variant v : {Variant{8, 2, 0.0f, true}, Variant{8, 1, 0.0f, true}, Variant{8, 2, 0.0f, false},
                          Variant{12, 12, 0.1f, false}, Variant{4, 2, 0.1f, true}}) {
    cuda::SdpaArgs a;
    a.B = 2, a.T = 64, a.H = v.H, a.H_kv = v.H_kv, a.D = 64;
    a.ld_in = a.ld_kv = (v.H + 2 * v.H_kv) * a.D;  // one fused q|k|v row, as the decoders keep it
    a.ld_out = v.H * a.D;
    a.scale = 0.125f, a.causal = v.causal, a.dropout_p = v.dropout;
    SCOPED_TRACE("H " + std::to_string(v.H) + " H_kv " + std::to_string(v.H_kv) + " dropout " +
                 std::to_string(v.dropout) + (v.causal ? " causal" : ""));
    for (const bool backward : {false, true})
      for (const bool padded : {false, true}) {
        try {
          cuda::sdpa_check_operations(a, padded, backward);
        } catch (const Error& e) {
          ADD_FAILURE() << (backward ? "backward" : "forward") << (padded ? " padded" : "") << ": " << e.what();
        }
      }
  }
}

// What the arguments cannot be, refused by name before cuDNN is asked.
TEST_F(CudaTrainCudnnLoader, RefusesKvHeadsThatDoNotDivideTheQueryHeads) {
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  cuda::SdpaArgs a;
  a.B = 1, a.T = 16, a.H = 8, a.H_kv = 3, a.D = 64, a.ld_in = 14 * 64, a.ld_out = 8 * 64;
  try {
    cuda::sdpa_check_operations(a, false, false);
    ADD_FAILURE() << "3 K/V heads for 8 query heads were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3 key/value heads must divide the 8 query heads"), std::string::npos)
        << e.what();
  }
}

#else  // the CPU build: the fixtures skip (no CUDA device), the bodies are for the CUDA build

TEST_F(CudaTrainCudnn, ForwardMatchesTheReference) {}
TEST_F(CudaTrainCudnnLoader, LoadsOrSaysWhereItLooked) { GTEST_SKIP() << "built without CUDA"; }

#endif

}  // namespace
}  // namespace tach::test
