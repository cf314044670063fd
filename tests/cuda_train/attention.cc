// The training attention kernels on CUDA against the CPU's: the encoders' (key padding mask,
// dropout on the probabilities, MPNet's relative position bias and its gradient, a classifier's
// first-token-only last layer) and the decoders' (causal or bidirectional, grouped-query heads,
// sliding windows, left padding). Each case runs the entry points on CPU tensors and on GPU
// copies (gradients poisoned first) and compares every output, saved probability and gradient.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "cuda_compare.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"

namespace tach::test {
namespace {

using ops::CausalAttentionArgs;

class CudaTrainAttention : public CudaTest {};

// Attention sums exponentials and products over keys in another order than the CPU's GEMMs:
// kReductionTol. The bias gradient sums score gradients whose rows each sum to zero, so its
// per-bucket parts are small sums of larger cancelling terms: 1e-3 of their largest.
constexpr double kCancellingSumTol = 1e-3;

// rows [r0, r0 + rows) and columns [c0, c0 + cols) of the last two dimensions of a [B, R, W]
// tensor, brought to the CPU as one contiguous [B, rows, cols].
Tensor block_of(const Tensor& t, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
  const Tensor host = t.device().kind == DeviceKind::cpu ? t : on_cpu(t);
  return host.narrow(1, r0, rows).narrow(2, c0, cols).contiguous();
}

enum class Padding { none, right, left, holes };

// [B, T] i32, 1 = real token. right: sequence b has T - 5b real tokens (at least 1), then padding;
// left: 7b padding tokens first; holes: every seventh key padding, and a last sequence (B >= 3)
// of padding only (the additive mask's uniform rows).
Tensor key_mask(int64_t B, int64_t T, Padding kind) {
  Tensor m = Tensor::empty({B, T}, DType::i32);
  int32_t* p = m.data<int32_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < T; ++j) {
      bool real = true;
      if (kind == Padding::right) real = j < std::max<int64_t>(1, T - 5 * b);
      if (kind == Padding::left) real = j >= std::min<int64_t>(T - 1, 7 * b);
      if (kind == Padding::holes) real = (j * 5 + b) % 7 != 0 && !(B >= 3 && b == B - 1);
      p[b * T + j] = real ? 1 : 0;
    }
  return m;
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const char* what) {
  EXPECT_LT(scaled_error(got, want), tol) << what;
}

// ---- Encoders: ops::attention_forward_train and ops::attention_backward ----

// MPNet's relative position bias: none, trained (its gradient added to a non-zero one), or
// frozen (the backward takes no gradient for it).
enum class Bias { none, trained, frozen };

struct EncoderCase {
  int64_t B, T, H, D, Tq;
  Padding padding;
  float dropout_p;
  bool save_probs;
  Bias bias;
};

// Everything one side (CPU or GPU) of an encoder case holds.
struct EncoderSide {
  Tensor qkv, out, probs, dout, grad, table, buckets, d_table, d_parts, mask;
};

EncoderSide encoder_side(const EncoderCase& c, Device device, const Tensor& qkv, const Tensor& dout,
                         const Tensor& table, const Tensor& buckets, const Tensor& d_table, const Tensor& mask) {
  const int64_t C = c.H * c.D;
  const bool gpu = device.kind == DeviceKind::cuda;
  EncoderSide s;
  s.qkv = gpu ? on_gpu(qkv) : qkv;
  s.dout = gpu ? on_gpu(dout) : dout;
  s.mask = gpu ? on_gpu(mask) : mask;
  s.out = Tensor::empty({c.B, c.T, C + 3}, DType::f32, device);  // a row stride other than C
  s.grad = Tensor::empty({c.B, c.T, 3 * C}, DType::f32, device);
  if (c.save_probs) s.probs = Tensor::empty({c.B, c.H, c.T, c.T}, DType::f32, device);
  if (c.bias != Bias::none) {
    s.table = gpu ? on_gpu(table) : table;
    s.buckets = gpu ? on_gpu(buckets) : buckets;
  }
  if (c.bias == Bias::trained) {
    s.d_table = gpu ? on_gpu(d_table) : d_table.contiguous();  // starts non-zero: the gradient adds
    s.d_parts = Tensor::empty({c.B, c.H, table.size(0)}, DType::f32, device);
  }
  if (gpu) {
    poison(s.out), poison(s.grad);
    if (s.probs.defined()) poison(s.probs);
    if (s.d_parts.defined()) poison(s.d_parts);
  }
  return s;
}

void run_encoder(const EncoderCase& c, EncoderSide& s, uint64_t dropout_key) {
  const int64_t C = c.H * c.D;
  const float scale = 1.0f / std::sqrt(float(c.D));
  auto rows = [&](const Tensor& t, int64_t col, int64_t n) { return t.narrow(1, 0, n).narrow(2, col, C); };
  const Tensor q = rows(s.qkv, 0, c.Tq), k = rows(s.qkv, C, c.T), v = rows(s.qkv, 2 * C, c.T);
  ops::attention_forward_train(rows(s.out, 0, c.Tq), s.probs, q, k, v, s.mask, int(c.H), scale, c.dropout_p,
                               dropout_key, s.table, s.buckets);
  ops::attention_backward(rows(s.grad, 0, c.Tq), rows(s.grad, C, c.T), rows(s.grad, 2 * C, c.T), s.d_table, s.d_parts,
                          rows(s.dout, 0, c.Tq), s.probs, q, k, v, s.mask, int(c.H), scale, c.dropout_p, dropout_key,
                          s.table, s.buckets);
}

void check_encoder_case(const EncoderCase& c) {
  SCOPED_TRACE(::testing::Message() << "B " << c.B << " T " << c.T << " H " << c.H << " D " << c.D << " Tq " << c.Tq
                                    << " padding " << int(c.padding) << " dropout " << c.dropout_p
                                    << (c.save_probs ? " saved" : " fused") << " bias " << int(c.bias));
  const int64_t C = c.H * c.D, NB = 32;
  const unsigned seed = unsigned(c.T * 31 + c.D);
  const Tensor qkv = random_tensor({c.B, c.T, 3 * C}, seed);
  const Tensor dout = random_tensor({c.B, c.T, C + 5}, seed + 1);
  const Tensor mask = key_mask(c.B, c.T, c.padding);
  Tensor table, buckets, d_table;
  if (c.bias != Bias::none) {
    table = random_tensor({NB, c.H}, seed + 2, 0.5f);
    d_table = random_tensor({NB, c.H}, seed + 3);
    const std::vector<int32_t> b = ops::relative_position_buckets(c.T, NB, 128);
    buckets = Tensor::empty({c.T, c.T}, DType::i32);
    std::copy(b.begin(), b.end(), buckets.data<int32_t>());
  }
  const uint64_t key = 0x1234567890abcdefull + uint64_t(c.T);
  EncoderSide cpu = encoder_side(c, Device::cpu(), qkv, dout, table, buckets, d_table, mask);
  EncoderSide gpu = encoder_side(c, kGpu, qkv, dout, table, buckets, d_table, mask);
  run_encoder(c, cpu, key);
  run_encoder(c, gpu, key);

  expect_near(block_of(gpu.out, 0, c.Tq, 0, C), block_of(cpu.out, 0, c.Tq, 0, C), kReductionTol, "out");
  if (c.save_probs) {
    const Tensor got = on_cpu(gpu.probs).reshape({c.B * c.H, c.T, c.T});
    const Tensor want = cpu.probs.reshape({c.B * c.H, c.T, c.T});
    expect_near(block_of(got, 0, c.Tq, 0, c.T), block_of(want, 0, c.Tq, 0, c.T), kReductionTol, "probs");
  }
  expect_near(block_of(gpu.grad, 0, c.Tq, 0, C), block_of(cpu.grad, 0, c.Tq, 0, C), kReductionTol, "dq");
  expect_near(block_of(gpu.grad, 0, c.T, C, C), block_of(cpu.grad, 0, c.T, C, C), kReductionTol, "dk");
  expect_near(block_of(gpu.grad, 0, c.T, 2 * C, C), block_of(cpu.grad, 0, c.T, 2 * C, C), kReductionTol, "dv");
  if (c.bias == Bias::trained) {
    expect_near(on_cpu(gpu.d_parts), cpu.d_parts, kCancellingSumTol, "the bias gradient's parts per sequence");
    expect_near(on_cpu(gpu.d_table), cpu.d_table, kReductionTol, "the bias table's gradient (accumulated)");
  }
}

TEST_F(CudaTrainAttention, EncoderForwardAndBackwardMatchCpu) {
  const EncoderCase cases[] = {
      {2, 37, 3, 20, 37, Padding::right, 0.0f, true, Bias::none},
      {1, 1, 1, 8, 1, Padding::none, 0.0f, true, Bias::none},            // N = 1
      {3, 37, 4, 24, 37, Padding::holes, 0.1f, true, Bias::none},        // additive mask, a row of padding only
      {2, 64, 2, 64, 1, Padding::right, 0.1f, false, Bias::none},        // a classifier's first token, fused
      {2, 45, 2, 64, 7, Padding::holes, 0.0f, true, Bias::none},         // the first rows only, additive mask
      {2, 40, 2, 16, 40, Padding::right, 0.1f, true, Bias::trained},     // MPNet's bias
      {2, 300, 2, 32, 300, Padding::right, 0.0f, false, Bias::trained},  // fused, long
      {3, 37, 2, 16, 1, Padding::holes, 0.1f, true, Bias::trained},      // the first token, additive mask
      {2, 40, 2, 16, 40, Padding::right, 0.0f, false, Bias::frozen},     // no bias gradient asked for
      {1, 20, 1, 200, 20, Padding::none, 0.5f, true, Bias::none},        // heads past 128 channels per thread
  };
  for (const EncoderCase& c : cases) check_encoder_case(c);
}

// Dropout draws the CPU's mask exactly: one bit drawn otherwise moves an output by a
// probability-sized amount, far past the tolerance. p = 0.5 drops half of every row.
TEST_F(CudaTrainAttention, EncoderDropoutDrawsTheCpuMask) {
  check_encoder_case({2, 50, 2, 32, 50, Padding::none, 0.5f, true, Bias::none});
  check_encoder_case({2, 50, 2, 32, 50, Padding::right, 0.5f, false, Bias::trained});
}

// The backward sums without atomics: two runs give bitwise-equal gradients, the bias table's too.
TEST_F(CudaTrainAttention, EncoderBackwardIsDeterministic) {
  const EncoderCase c{2, 96, 2, 32, 96, Padding::right, 0.1f, false, Bias::trained};
  const int64_t C = c.H * c.D, NB = 32;
  const Tensor qkv = random_tensor({c.B, c.T, 3 * C}, 5), dout = random_tensor({c.B, c.T, C + 5}, 6);
  const Tensor table = random_tensor({NB, c.H}, 7, 0.5f), d_table = random_tensor({NB, c.H}, 8);
  const std::vector<int32_t> b = ops::relative_position_buckets(c.T, NB, 128);
  Tensor buckets = Tensor::empty({c.T, c.T}, DType::i32);
  std::copy(b.begin(), b.end(), buckets.data<int32_t>());
  const Tensor mask = key_mask(c.B, c.T, c.padding);
  EncoderSide first = encoder_side(c, kGpu, qkv, dout, table, buckets, d_table, mask);
  EncoderSide second = encoder_side(c, kGpu, qkv, dout, table, buckets, d_table, mask);
  run_encoder(c, first, 9);
  run_encoder(c, second, 9);
  EXPECT_EQ(scaled_error(on_cpu(first.grad), on_cpu(second.grad)), 0.0);
  EXPECT_EQ(scaled_error(on_cpu(first.d_table), on_cpu(second.d_table)), 0.0);
}

// ---- Decoders (and ModernBERT): ops::causal_attention_forward_train and ops::causal_attention_backward ----

struct CausalCase {
  int64_t B, T, H, KVH, D, window;
  bool causal;
  Padding padding;
  bool save_probs;
};

struct CausalSide {
  Tensor qkv, out, probs, dout, grad, mask;
};

void run_causal(const CausalCase& c, CausalSide& s) {
  const int64_t HD = c.H * c.D, KD = c.KVH * c.D;
  CausalAttentionArgs a;
  a.B = c.B, a.Tq = c.T, a.H = c.H, a.KVH = c.KVH, a.D = c.D;
  a.scale = 1.0f / std::sqrt(float(c.D)), a.window = c.window, a.causal = c.causal;
  // q|k|v as column blocks of one fused [N, (H + 2 KVH) D] buffer, the gradients likewise.
  auto cols = [](const Tensor& t, int64_t c0, int64_t n) { return t.narrow(1, c0, n); };
  const Tensor q = cols(s.qkv, 0, HD), k = cols(s.qkv, HD, KD), v = cols(s.qkv, HD + KD, KD);
  ops::causal_attention_forward_train(cols(s.out, 0, HD), s.probs, q, k, v, s.mask, a);
  ops::causal_attention_backward(cols(s.grad, 0, HD), cols(s.grad, HD, KD), cols(s.grad, HD + KD, KD),
                                 cols(s.dout, 0, HD), s.probs, q, k, v, s.mask, a);
}

void check_causal_case(const CausalCase& c) {
  SCOPED_TRACE(::testing::Message() << "B " << c.B << " T " << c.T << " H " << c.H << "/" << c.KVH << " D " << c.D
                                    << " window " << c.window << (c.causal ? " causal" : " bidirectional")
                                    << " padding " << int(c.padding) << (c.save_probs ? " saved" : " fused"));
  const int64_t N = c.B * c.T, HD = c.H * c.D, W = (c.H + 2 * c.KVH) * c.D;
  const unsigned seed = unsigned(c.T * 17 + c.D + c.window);
  const Tensor qkv = random_tensor({N, W}, seed), dout = random_tensor({N, HD + 3}, seed + 1);
  const Tensor mask = c.padding == Padding::none ? Tensor() : key_mask(c.B, c.T, c.padding);
  CausalSide sides[2];
  for (int gpu = 0; gpu < 2; ++gpu) {
    const Device device = gpu ? kGpu : Device::cpu();
    CausalSide& s = sides[gpu];
    s.qkv = gpu ? on_gpu(qkv) : qkv;
    s.dout = gpu ? on_gpu(dout) : dout;
    if (mask.defined()) s.mask = gpu ? on_gpu(mask) : mask;
    s.out = Tensor::empty({N, HD + 2}, DType::f32, device);
    s.grad = Tensor::empty({N, W}, DType::f32, device);
    if (c.save_probs) s.probs = Tensor::empty({c.B, c.H, c.T, c.T}, DType::f32, device);
    if (gpu) {
      poison(s.out), poison(s.grad);
      if (s.probs.defined()) poison(s.probs);
    }
    run_causal(c, s);
  }
  const CausalSide &cpu = sides[0], &gpu = sides[1];
  auto cols = [](const Tensor& t, int64_t c0, int64_t n) {
    const Tensor host = t.device().kind == DeviceKind::cpu ? t : on_cpu(t);
    return host.narrow(1, c0, n).contiguous();
  };
  const int64_t KD = c.KVH * c.D;
  expect_near(cols(gpu.out, 0, HD), cols(cpu.out, 0, HD), kReductionTol, "out");
  if (c.save_probs) expect_near(on_cpu(gpu.probs), cpu.probs, kReductionTol, "probs");
  expect_near(cols(gpu.grad, 0, HD), cols(cpu.grad, 0, HD), kReductionTol, "dq");
  expect_near(cols(gpu.grad, HD, KD), cols(cpu.grad, HD, KD), kReductionTol, "dk");
  expect_near(cols(gpu.grad, HD + KD, KD), cols(cpu.grad, HD + KD, KD), kReductionTol, "dv");
}

TEST_F(CudaTrainAttention, CausalForwardAndBackwardMatchCpu) {
  const CausalCase cases[] = {
      {2, 37, 4, 2, 16, 0, true, Padding::none, true},    // grouped-query
      {2, 40, 4, 1, 32, 0, true, Padding::left, false},   // left padding: rows of padding get zeros; fused
      {2, 70, 2, 2, 24, 8, true, Padding::right, true},   // a sliding window
      {1, 1, 1, 1, 8, 0, true, Padding::none, true},      // N = 1
      {1, 300, 2, 1, 64, 0, true, Padding::none, false},  // long, fused
      {1, 17, 2, 1, 256, 0, true, Padding::left, true},   // heads past 128 channels per thread
  };
  for (const CausalCase& c : cases) check_causal_case(c);
}

// ModernBERT's layers: bidirectional, global or within a window on either side; under left
// padding a window's first rows see padding only and take the mean of every value row.
TEST_F(CudaTrainAttention, BidirectionalForwardAndBackwardMatchCpu) {
  const CausalCase cases[] = {
      {2, 37, 3, 3, 20, 0, false, Padding::right, true},
      {2, 40, 2, 1, 16, 5, false, Padding::left, false},  // rows 0..1 of sequence 1 see padding only
      {3, 64, 2, 2, 32, 5, false, Padding::left, true},   // sequence 2: rows 0..8 see padding only
      {2, 33, 2, 2, 24, 4, false, Padding::holes, true},
  };
  for (const CausalCase& c : cases) check_causal_case(c);
}

TEST_F(CudaTrainAttention, CausalBackwardIsDeterministic) {
  const CausalCase c{2, 80, 4, 2, 32, 16, true, Padding::left, false};
  const int64_t N = c.B * c.T, HD = c.H * c.D, W = (c.H + 2 * c.KVH) * c.D;
  const Tensor qkv = on_gpu(random_tensor({N, W}, 3)), dout = on_gpu(random_tensor({N, HD + 3}, 4));
  const Tensor mask = on_gpu(key_mask(c.B, c.T, c.padding));
  CausalSide runs[2];
  for (CausalSide& s : runs) {
    s.qkv = qkv, s.dout = dout, s.mask = mask;
    s.out = Tensor::empty({N, HD + 2}, DType::f32, kGpu);
    s.grad = Tensor::zeros({N, W}, DType::f32, kGpu);
    run_causal(c, s);
  }
  EXPECT_EQ(scaled_error(on_cpu(runs[0].grad), on_cpu(runs[1].grad)), 0.0);
}

// Seconds per call of step, averaged over 5 after one warm-up (plans, pool blocks). A copy back of
// one element of `last` waits for tach's stream before each clock reading.
double seconds_per(const std::function<void()>& step, const Tensor& last) {
  const auto sync = [&] { (void)on_cpu(last.reshape({last.numel()}).narrow(0, 0, 1)); };
  step();
  sync();
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kReps = 5;
  for (int i = 0; i < kReps; ++i) step();
  sync();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kReps;
}

// Prints (asserts nothing: a timing is no test) the training attention's forward and backward
// times at DistilBERT-base's shapes (32 x 128 tokens, 12 heads of 64, probabilities saved, dropout
// 0.1) and at a Llama-3.2-1B-sized causal layer (8 x 512 tokens, 32 query heads on 8 key/value
// heads of 64), for choosing what to make faster.
TEST_F(CudaTrainAttention, PrintsTimesAtModelShapes) {
  {
    const int64_t B = 32, T = 128, H = 12, D = 64, C = H * D;
    const Tensor qkv = on_gpu(random_tensor({B, T, 3 * C}, 1)), dout = on_gpu(random_tensor({B, T, C}, 2));
    const Tensor mask = on_gpu(key_mask(B, T, Padding::right));
    Tensor out = Tensor::empty({B, T, C}, DType::f32, kGpu), grad = Tensor::empty({B, T, 3 * C}, DType::f32, kGpu);
    Tensor probs = Tensor::empty({B, H, T, T}, DType::f32, kGpu);
    const Tensor q = qkv.narrow(2, 0, C), k = qkv.narrow(2, C, C), v = qkv.narrow(2, 2 * C, C);
    const float scale = 0.125f;
    const double fwd =
        seconds_per([&] { ops::attention_forward_train(out, probs, q, k, v, mask, int(H), scale, 0.1f, 7); }, out);
    const double bwd = seconds_per(
        [&] {
          ops::attention_backward(grad.narrow(2, 0, C), grad.narrow(2, C, C), grad.narrow(2, 2 * C, C), Tensor(),
                                  Tensor(), dout, probs, q, k, v, mask, int(H), scale, 0.1f, 7);
        },
        grad);
    std::printf("training attention B %lld T %lld H %lld D %lld f32: forward %.3f ms, backward %.3f ms\n", (long long)B,
                (long long)T, (long long)H, (long long)D, fwd * 1e3, bwd * 1e3);
  }
  {
    const int64_t B = 8, T = 512, H = 32, KVH = 8, D = 64, N = B * T, HD = H * D, KD = KVH * D;
    const CausalCase c{B, T, H, KVH, D, 0, true, Padding::none, true};
    CausalSide s;
    s.qkv = on_gpu(random_tensor({N, HD + 2 * KD}, 3));
    s.dout = on_gpu(random_tensor({N, HD}, 4));
    s.out = Tensor::empty({N, HD}, DType::f32, kGpu);
    s.grad = Tensor::empty({N, HD + 2 * KD}, DType::f32, kGpu);
    s.probs = Tensor::empty({B, H, T, T}, DType::f32, kGpu);
    const double both = seconds_per([&] { run_causal(c, s); }, s.grad);
    std::printf("training causal attention B %lld T %lld H %lld/%lld D %lld f32: forward + backward %.3f ms\n",
                (long long)B, (long long)T, (long long)H, (long long)KVH, (long long)D, both * 1e3);
  }
}

}  // namespace
}  // namespace tach::test
