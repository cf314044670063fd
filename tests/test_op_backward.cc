// Backward kernels against central finite differences of their forward kernels, in one harness:
// the gradient of L = sum(dout * forward(x)) with respect to every input element.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/lora.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "test_util.h"

namespace tach::ops {
namespace {

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

using test::expect_finite_difference;
using test::randn;

TEST(Backward, Gelu) {
  const int64_t n = 64;
  auto x = randn(n, 1, 2.0f);
  const auto dout = randn(n, 2);
  std::vector<float> dx(n, 0.5f);  // gradients accumulate: start from something
  gelu_backward_cpu(dx.data(), x.data(), dout.data(), n);
  for (auto& v : dx) v -= 0.5f;
  std::vector<float> y(n);
  expect_finite_difference(
      x, dx,
      [&] {
        gelu_forward_cpu(y.data(), x.data(), n);
        return dot(y, dout);
      },
      "dx");
}

TEST(Backward, LayerNormWithResidual) {
  const int64_t N = 3, C = 16;
  auto x = randn(N * C, 3), res = randn(N * C, 4), gamma = randn(C, 5), beta = randn(C, 6);
  const auto dout = randn(N * C, 7);
  std::vector<float> out(N * C), mean(N), rstd(N), inp(N * C);
  layer_norm_forward_cpu(out.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f, mean.data(),
                         rstd.data());
  for (int64_t i = 0; i < N * C; ++i) inp[i] = x[i] + res[i];
  std::vector<float> dinp(N * C, 0.f), dgamma(C, 0.f), dbeta(C, 0.f);
  layer_norm_backward_cpu(dinp.data(), dgamma.data(), dbeta.data(), dout.data(), inp.data(), gamma.data(), mean.data(),
                          rstd.data(), N, C);
  const auto loss = [&] {
    layer_norm_forward_cpu(out.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f);
    return dot(out, dout);
  };
  expect_finite_difference(x, dinp, loss, "dx");
  expect_finite_difference(res, dinp, loss, "dresidual");
  expect_finite_difference(gamma, dgamma, loss, "dgamma");
  expect_finite_difference(beta, dbeta, loss, "dbeta");
  // The saved statistics are the forward's: the same output with and without saving them.
  std::vector<float> again(N * C);
  layer_norm_forward_cpu(again.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f);
  layer_norm_forward_cpu(out.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f, mean.data(),
                         rstd.data());
  EXPECT_EQ(again, out);
}

TEST(Backward, Linear) {
  const int64_t M = 5, N = 4, K = 6;
  auto x = randn(M * K, 11), W = randn(N * K, 12), b = randn(N, 13);
  const auto dout = randn(M * N, 14);
  std::vector<float> dx(M * K, 0.f), dW(N * K, 0.f), db(N, 0.f), y(M * N);
  linear_backward_cpu(dx.data(), dW.data(), db.data(), dout.data(), x.data(), W.data(), M, N, K);
  const auto loss = [&] {
    linear_forward_cpu(y.data(), x.data(), W.data(), b.data(), M, N, K);
    return dot(y, dout);
  };
  expect_finite_difference(x, dx, loss, "dx");
  expect_finite_difference(W, dW, loss, "dW");
  expect_finite_difference(b, db, loss, "db");
}

// Attention with a right-padded row, a row whose mask is not a prefix (the additive path) and
// dropout on the probabilities: the same key in forward and backward.
TEST(Backward, AttentionWithPaddingAndDropout) {
  const int64_t B = 3, T = 5, H = 2, D = 3, C = H * D;
  auto qkv = randn(B * T * 3 * C, 21);  // [B, T, 3C] as the fused projection writes it
  const auto dout = randn(B * T * C, 22);
  const std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0};
  for (float p : {0.0f, 0.3f}) {
    const uint64_t key = dropout_key(7, 0, 1);
    std::vector<float> out(B * T * C), probs(B * H * T * T), dqkv(B * T * 3 * C, 0.f);
    const float* q = qkv.data();
    attention_forward_train_cpu(out.data(), probs.data(), q, q + C, q + 2 * C, mask.data(), B, T, H, D, 3 * C, C, 0.5f,
                                p, key);
    attention_backward_cpu(dqkv.data(), dqkv.data() + C, dqkv.data() + 2 * C, dout.data(), probs.data(), q, q + C,
                           q + 2 * C, mask.data(), B, T, H, D, 3 * C, C, 0.5f, p, key);
    expect_finite_difference(
        qkv, dqkv,
        [&] {
          attention_forward_train_cpu(out.data(), probs.data(), qkv.data(), qkv.data() + C, qkv.data() + 2 * C,
                                      mask.data(), B, T, H, D, 3 * C, C, 0.5f, p, key);
          return dot(out, dout);
        },
        p > 0 ? "dqkv (dropout 0.3)" : "dqkv");
  }
}

// MPNet's relative position bias: the score gradients summed per bucket give the table's
// gradient, with saved probabilities and recomputed ones, over all queries and the first only.
TEST(Backward, AttentionRelativeBias) {
  const int64_t B = 2, T = 12, H = 2, D = 3, C = H * D, NB = 32;
  auto qkv = randn(B * T * 3 * C, 61);
  const auto dout = randn(B * T * C, 62);
  auto table = randn(NB * H, 63);
  const std::vector<int32_t> buckets = relative_position_buckets(T, NB, 128);
  std::vector<int32_t> mask(B * T, 1);
  for (int64_t t = 9; t < T; ++t) mask[size_t(T + t)] = 0;  // the second row is right-padded
  for (const int64_t Tq : {int64_t(-1), int64_t(1)})
    for (const bool saved : {true, false}) {
      const ScoreBias bias{buckets.data(), table.data(), NB};
      std::vector<float> out(B * T * C, 0.f), probs(B * H * T * T), dqkv(B * T * 3 * C, 0.f), parts(B * H * NB);
      const float* q = qkv.data();
      float* P = saved ? probs.data() : nullptr;
      attention_forward_train_cpu(out.data(), P, q, q + C, q + 2 * C, mask.data(), B, T, H, D, 3 * C, C, 0.5f, 0.f, 0,
                                  Tq, bias);
      attention_backward_cpu(dqkv.data(), dqkv.data() + C, dqkv.data() + 2 * C, dout.data(), P, q, q + C, q + 2 * C,
                             mask.data(), B, T, H, D, 3 * C, C, 0.5f, 0.f, 0, Tq, bias, parts.data());
      std::vector<float> dtable(NB * H, 0.f);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t k = 0; k < NB; ++k) dtable[size_t(k * H + h)] += parts[size_t((b * H + h) * NB + k)];
      // Only the query rows that are computed (Tq) count in the loss.
      const int64_t rows = Tq < 0 ? T : Tq;
      const auto loss = [&] {
        attention_forward_train_cpu(out.data(), P, q, q + C, q + 2 * C, mask.data(), B, T, H, D, 3 * C, C, 0.5f, 0.f, 0,
                                    Tq, bias);
        double sum = 0;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t i = 0; i < rows * C; ++i)
            sum += double(out[size_t(b * T * C + i)]) * dout[size_t(b * T * C + i)];
        return sum;
      };
      expect_finite_difference(table, dtable, loss, saved ? "dtable (saved)" : "dtable (recomputed)");
      // The dout rows past Tq never reach the backward either.
      if (Tq < 0) expect_finite_difference(qkv, dqkv, loss, "dqkv with a bias");
    }
}

// The training forward equals the inference kernel when dropout is off.
TEST(Backward, AttentionTrainForwardMatchesInference) {
  const int64_t B = 2, T = 4, H = 2, D = 4, C = H * D;
  const auto qkv = randn(B * T * 3 * C, 31);
  const std::vector<int32_t> mask = {1, 1, 1, 0, 1, 1, 1, 1};
  std::vector<float> a(B * T * C), b(B * T * C), probs(B * H * T * T);
  attention_forward_cpu(a.data(), qkv.data(), qkv.data() + C, qkv.data() + 2 * C, mask.data(), B, T, H, D, 3 * C, C,
                        0.35f);
  attention_forward_train_cpu(b.data(), probs.data(), qkv.data(), qkv.data() + C, qkv.data() + 2 * C, mask.data(), B, T,
                              H, D, 3 * C, C, 0.35f, 0.f, 0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
}

TEST(Backward, EmbeddingScatterAddSkipsPadding) {
  const int64_t V = 5, C = 3, N = 6;
  const std::vector<int32_t> ids = {1, 3, 1, 0, 4, 1};
  auto table = randn(V * C, 41);
  const auto dout = randn(N * C, 42);
  std::vector<float> dtable(V * C, 0.f), out(N * C);
  embedding_backward_cpu(dtable.data(), ids.data(), dout.data(), N, C, -1);
  expect_finite_difference(
      table, dtable,
      [&] {
        embedding_forward_cpu(out.data(), ids.data(), table.data(), DType::f32, N, C, false);
        return dot(out, dout);
      },
      "dtable");
  // With padding_idx 0 the row of id 0 gets nothing (nn.Embedding(padding_idx=0)).
  std::vector<float> padded(V * C, 0.f);
  embedding_backward_cpu(padded.data(), ids.data(), dout.data(), N, C, 0);
  for (int64_t c = 0; c < C; ++c) EXPECT_EQ(padded[c], 0.f);
  for (int64_t i = C; i < V * C; ++i) EXPECT_EQ(padded[i], dtable[i]);
}

TEST(Backward, DropoutMaskIsDeterministicAndUnbiased) {
  const int64_t n = 200000;
  std::vector<float> x(n, 1.0f), y(n), y2(n), dx(n);
  const uint64_t key = dropout_key(42, 3, 5);
  dropout_forward_cpu(y.data(), x.data(), n, 0.1f, key);
  dropout_forward_cpu(y2.data(), x.data(), n, 0.1f, key);
  EXPECT_EQ(y, y2);
  double kept = 0, mean = 0;
  for (float v : y) {
    kept += v != 0.f;
    mean += v;
  }
  EXPECT_NEAR(kept / n, 0.9, 0.005);
  EXPECT_NEAR(mean / n, 1.0, 0.01);  // scaled by 1/(1-p): the expectation is kept
  // The backward applies the same mask and scale.
  dropout_backward_cpu(dx.data(), x.data(), n, 0.1f, key);
  EXPECT_EQ(dx, y);
  // Another site or micro-batch draws another mask.
  dropout_forward_cpu(y2.data(), x.data(), n, 0.1f, dropout_key(42, 4, 5));
  EXPECT_NE(y, y2);
}

TEST(Backward, ReluAndTanh) {
  const int64_t n = 32;
  auto x = randn(n, 51, 2.0f);
  const auto dout = randn(n, 52);
  std::vector<float> y(n), dx(n, 0.f);
  tanh_forward_cpu(y.data(), x.data(), n);
  tanh_backward_cpu(dx.data(), y.data(), dout.data(), n);
  expect_finite_difference(
      x, dx,
      [&] {
        tanh_forward_cpu(y.data(), x.data(), n);
        return dot(y, dout);
      },
      "tanh dx");
  for (auto& v : x)
    if (std::fabs(v) < 0.05f) v = 0.5f;  // keep away from the kink, where the difference quotient is not the derivative
  std::fill(dx.begin(), dx.end(), 0.f);
  relu_forward_cpu(y.data(), x.data(), n);
  relu_backward_cpu(dx.data(), y.data(), dout.data(), n);
  expect_finite_difference(
      x, dx,
      [&] {
        relu_forward_cpu(y.data(), x.data(), n);
        return dot(y, dout);
      },
      "relu dx");
}

TEST(Backward, RmsNorm) {
  const int64_t N = 3, C = 16;
  auto x = randn(N * C, 41, 1.5f), w = randn(C, 42);
  const auto dout = randn(N * C, 43);
  std::vector<float> out(N * C), rstd(N);
  rms_norm_forward_cpu(out.data(), x.data(), nullptr, w.data(), N, C, 1e-6f, rstd.data());
  std::vector<float> dx(N * C, 0.25f), dw(C, 0.f);  // dx accumulates (the residual stream's gradient)
  rms_norm_backward_cpu(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
  for (auto& v : dx) v -= 0.25f;
  const auto loss = [&] {
    rms_norm_forward_cpu(out.data(), x.data(), nullptr, w.data(), N, C, 1e-6f);
    return dot(out, dout);
  };
  expect_finite_difference(x, dx, loss, "dx");
  expect_finite_difference(w, dw, loss, "dweight");
}

TEST(Backward, RopeIsItsOwnTransposedRotation) {
  const int64_t N = 4, Hq = 2, Hk = 1, D = 8, ld = (Hq + 2 * Hk) * D;
  Tensor positions = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) positions.data<int32_t>()[i] = int32_t(3 * i + 1);
  RopeSettings settings;
  settings.head_dim = D;
  const RopeTable table = rope_table(positions, rope_inverse_frequencies(settings, 16));
  auto x = randn(N * ld, 51);
  const auto dout = randn(N * ld, 52);
  Tensor d = Tensor::empty({N, ld}, DType::f32);
  std::copy(dout.begin(), dout.end(), d.data<float>());
  rope_backward(d, Hq, Hk, D, table);
  std::vector<float> dx(d.data<float>(), d.data<float>() + N * ld);
  Tensor y = Tensor::empty({N, ld}, DType::f32);
  expect_finite_difference(
      x, dx,
      [&] {
        std::copy(x.begin(), x.end(), y.data<float>());
        rope_forward(y, Hq, Hk, D, table);
        return dot(std::vector<float>(y.data<float>(), y.data<float>() + N * ld), dout);
      },
      "dx (values pass through)");
}

TEST(Backward, SiluGate) {
  const int64_t N = 3, I = 8;
  auto gu = randn(N * 2 * I, 61, 2.0f);
  const auto dout = randn(N * I, 62);
  std::vector<float> dgu(N * 2 * I), y(N * I);
  silu_gate_backward_cpu(dgu.data(), gu.data(), dout.data(), N, I);
  expect_finite_difference(
      gu, dgu,
      [&] {
        silu_gate_forward_cpu(y.data(), gu.data(), N, I);
        return dot(y, dout);
      },
      "d(gate|up)");
}

TEST(Backward, GeluTanhGate) {  // Gemma's GeGLU: gelu_pytorch_tanh(gate) * up
  const int64_t N = 3, I = 8;
  auto gu = randn(N * 2 * I, 63, 2.0f);
  const auto dout = randn(N * I, 64);
  std::vector<float> dgu(N * 2 * I), y(N * I);
  gelu_tanh_gate_backward_cpu(dgu.data(), gu.data(), dout.data(), N, I);
  expect_finite_difference(
      gu, dgu,
      [&] {
        gelu_tanh_gate_forward_cpu(y.data(), gu.data(), N, I);
        return dot(y, dout);
      },
      "d(gate|up)");
}

TEST(Backward, GeluGate) {  // ModernBERT's GeGLU: gelu(input) * gate, the halves of Wi
  const int64_t N = 3, I = 8;
  auto gu = randn(N * 2 * I, 65, 2.0f);
  const auto dout = randn(N * I, 66);
  std::vector<float> dgu(N * 2 * I), y(N * I);
  gelu_gate_backward_cpu(dgu.data(), gu.data(), dout.data(), N, I);
  expect_finite_difference(
      gu, dgu,
      [&] {
        gelu_gate_forward_cpu(y.data(), gu.data(), N, I);
        return dot(y, dout);
      },
      "d(gate|up)");
}

// The pre-norm LayerNorm without a bias (ModernBERT): h += delta in place, then the norm; its
// backward with no dbeta.
TEST(Backward, PreLayerNormWithoutBias) {
  const int64_t N = 3, C = 16;
  auto h0 = randn(N * C, 67), delta = randn(N * C, 68), gamma = randn(C, 69);
  const auto dout = randn(N * C, 70);
  std::vector<float> h = h0, out(N * C), mean(N), rstd(N), dinp(N * C, 0.f), dgamma(C, 0.f);
  add_layer_norm_forward_cpu(out.data(), h.data(), delta.data(), gamma.data(), nullptr, N, C, 1e-5f, mean.data(),
                             rstd.data());
  for (int64_t i = 0; i < N * C; ++i) EXPECT_FLOAT_EQ(h[size_t(i)], h0[size_t(i)] + delta[size_t(i)]);
  layer_norm_backward_cpu(dinp.data(), dgamma.data(), nullptr, dout.data(), h.data(), gamma.data(), mean.data(),
                          rstd.data(), N, C);
  const auto loss = [&] {
    std::vector<float> x = h0;
    add_layer_norm_forward_cpu(out.data(), x.data(), delta.data(), gamma.data(), nullptr, N, C, 1e-5f);
    return dot(out, dout);
  };
  expect_finite_difference(h0, dinp, loss, "dh");
  expect_finite_difference(delta, dinp, loss, "ddelta");
  expect_finite_difference(gamma, dgamma, loss, "dgamma");
}

// Qwen3's and Gemma 3's per-head q/k norm, in place on a column block of a wider buffer (stride
// ld): the input gradient in place, the shared weight's accumulated over every head and row.
TEST(Backward, RmsNormHeadsInAStridedBlock) {
  const int64_t N = 3, heads = 2, D = 8, col0 = 4, ld = col0 + heads * D + 5;
  auto x = randn(N * ld, 65, 1.5f), w = randn(D, 66);
  const auto dout = randn(N * ld, 67);
  std::vector<float> y(N * ld), saved(N * heads * D), rstd(N * heads);
  y = x;
  rms_norm_heads_forward_cpu(y.data() + col0, ld, N, heads, D, w.data(), 1e-6f, saved.data(), rstd.data());
  std::vector<float> d = dout, dw(D, 0.f);
  rms_norm_heads_backward_cpu(d.data() + col0, ld, saved.data(), w.data(), rstd.data(), dw.data(), N, heads, D);
  // Columns outside the block pass through: their gradient is dout's.
  std::vector<float> dx = d;
  const auto loss = [&] {
    y = x;
    rms_norm_heads_forward_cpu(y.data() + col0, ld, N, heads, D, w.data(), 1e-6f);
    return dot(y, dout);
  };
  expect_finite_difference(x, dx, loss, "dx");
  expect_finite_difference(w, dw, loss, "dweight");
}

// Grouped-query causal attention (4 query heads on 2 key/value heads) with a right-padded row,
// from saved probabilities and recomputed ones; saving the probabilities leaves the output as it is.
TEST(Backward, CausalGroupedQueryAttentionWithPadding) {
  const int64_t B = 2, T = 5, H = 4, KVH = 2, D = 3, QKV = (H + 2 * KVH) * D;
  auto qkv = randn(B * T * QKV, 71);
  const auto dout = randn(B * T * H * D, 72);
  const std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  CausalAttentionArgs a;
  a.B = B, a.Tq = T, a.H = H, a.KVH = KVH, a.D = D, a.ld_q = a.ld_kv = QKV, a.batch_stride_kv = T * QKV;
  a.ld_out = H * D, a.mask_stride = T, a.scale = 0.6f;
  std::vector<float> out(B * T * H * D), inference(B * T * H * D), probs(B * H * T * T);
  const float* q = qkv.data();
  causal_attention_forward_cpu(inference.data(), nullptr, q, q + H * D, q + (H + KVH) * D, mask.data(), a);
  causal_attention_forward_cpu(out.data(), probs.data(), q, q + H * D, q + (H + KVH) * D, mask.data(), a);
  EXPECT_EQ(out, inference);
  for (bool saved : {true, false}) {
    std::vector<float> dqkv(B * T * QKV, 0.f);
    causal_attention_backward_cpu(dqkv.data(), dqkv.data() + H * D, dqkv.data() + (H + KVH) * D, dout.data(),
                                  saved ? probs.data() : nullptr, q, q + H * D, q + (H + KVH) * D, mask.data(), a);
    expect_finite_difference(
        qkv, dqkv,
        [&] {
          causal_attention_forward_cpu(out.data(), nullptr, qkv.data(), qkv.data() + H * D, qkv.data() + (H + KVH) * D,
                                       mask.data(), a);
          return dot(out, dout);
        },
        saved ? "dqkv (saved probabilities)" : "dqkv (recomputed)");
  }
}

// A LoRA adapter on rows [1, 1 + N) of a wider output, with and without dropout on its input
// (the backward draws the same mask again from the key): dx, dA and dB.
TEST(Backward, LoraWithDropout) {
  const int64_t M = 4, K = 6, N = 3, r = 2, ldy = 5;
  auto x = randn(M * K, 91), A = randn(r * K, 92), Bw = randn(N * r, 93);
  const auto dout = randn(M * ldy, 94);
  for (float p : {0.0f, 0.4f}) {
    LoraShape s;
    s.M = M, s.K = K, s.N = N, s.r = r, s.scale = 1.5f, s.dropout = p, s.dropout_key = dropout_key(5, 1, 2);
    std::vector<float> y(M * ldy, 0.f), xa(M * r), scratch(M * K + M * r);
    lora_forward_cpu(y.data() + 1, ldy, xa.data(), x.data(), A.data(), Bw.data(), s, scratch.data());
    std::vector<float> dx(M * K, 0.f), dA(r * K, 0.f), dB(N * r, 0.f);
    lora_backward_cpu(dx.data(), dA.data(), dB.data(), dout.data() + 1, ldy, x.data(), xa.data(), A.data(), Bw.data(),
                      s, scratch.data());
    const auto loss = [&] {
      std::fill(y.begin(), y.end(), 0.f);
      lora_forward_cpu(y.data() + 1, ldy, xa.data(), x.data(), A.data(), Bw.data(), s, scratch.data());
      return dot(y, dout);
    };
    const std::string tag = p > 0 ? " (dropout 0.4)" : "";
    expect_finite_difference(x, dx, loss, "dx" + tag);
    expect_finite_difference(A, dA, loss, "dA" + tag);
    expect_finite_difference(Bw, dB, loss, "dB" + tag);
  }
}

}  // namespace
}  // namespace tach::ops
