// Every op's backward against central finite differences in double precision: each op's forward
// written again here in double (the textbook formula, as transformers computes it), its loss
// L = Σ dout · forward(x) differenced with a step small enough that the quotient is exact to
// ~1e-9, and tach's f32 backward kernel compared with it at 1e-4 relative. (test_op_backward.cc
// differences tach's own f32 kernels, so it also covers dropout masks and saved statistics.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"
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

using Vec = std::vector<double>;

Vec to_double(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

double dot(const Vec& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * double(b[i]);
  return s;
}

// analytic[i] (tach, f32) against (L(x + h e_i) - L(x - h e_i)) / 2h with L in double.
void expect_matches_double_difference(Vec& x, const std::vector<float>& analytic, const std::function<double()>& loss,
                                      const std::string& what, double rel_tol = 1e-4, double abs_tol = 1e-5) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i], h = 1e-5 * std::max(1.0, std::abs(saved));
    x[i] = saved + h;
    const double up = loss();
    x[i] = saved - h;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    const double err = std::abs(double(analytic[i]) - numeric) / (abs_tol + rel_tol * std::abs(numeric));
    if (err > worst) worst = err, worst_i = i;
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << worst_i << " analytic " << analytic[worst_i]
                        << " is off the double-precision difference by more than " << rel_tol << " relative";
}

TEST(BackwardDouble, Gelu) {
  const int64_t n = 64;
  auto xf = test::randn(n, 1, 2.0f);
  const auto dout = test::randn(n, 2);
  std::vector<float> dx(n, 0.f);
  gelu_backward_cpu(dx.data(), xf.data(), dout.data(), n);
  Vec x = to_double(xf);
  expect_matches_double_difference(
      x, dx,
      [&] {
        Vec y(n);
        for (int64_t i = 0; i < n; ++i) y[i] = 0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0)));  // exact GELU
        return dot(y, dout);
      },
      "gelu dx");
}

TEST(BackwardDouble, ReluAndTanh) {
  const int64_t n = 32;
  auto xf = test::randn(n, 51, 2.0f);
  for (auto& v : xf)
    if (std::fabs(v) < 0.05f) v = 0.5f;  // away from relu's kink
  const auto dout = test::randn(n, 52);
  std::vector<float> y(n), dx(n, 0.f);
  tanh_forward_cpu(y.data(), xf.data(), n);
  tanh_backward_cpu(dx.data(), y.data(), dout.data(), n);
  Vec x = to_double(xf);
  expect_matches_double_difference(
      x, dx,
      [&] {
        Vec t(n);
        for (int64_t i = 0; i < n; ++i) t[i] = std::tanh(x[i]);
        return dot(t, dout);
      },
      "tanh dx");
  std::fill(dx.begin(), dx.end(), 0.f);
  relu_forward_cpu(y.data(), xf.data(), n);
  relu_backward_cpu(dx.data(), y.data(), dout.data(), n);
  expect_matches_double_difference(
      x, dx,
      [&] {
        Vec t(n);
        for (int64_t i = 0; i < n; ++i) t[i] = std::max(0.0, x[i]);
        return dot(t, dout);
      },
      "relu dx");
}

TEST(BackwardDouble, LayerNormWithResidual) {
  const int64_t N = 3, C = 16;
  auto xf = test::randn(N * C, 3), rf = test::randn(N * C, 4), gf = test::randn(C, 5), bf = test::randn(C, 6);
  const auto dout = test::randn(N * C, 7);
  std::vector<float> out(N * C), mean(N), rstd(N), inp(N * C);
  layer_norm_forward_cpu(out.data(), xf.data(), rf.data(), gf.data(), bf.data(), N, C, 1e-5f, mean.data(), rstd.data());
  for (int64_t i = 0; i < N * C; ++i) inp[i] = xf[i] + rf[i];
  std::vector<float> dinp(N * C, 0.f), dg(C, 0.f), db(C, 0.f);
  layer_norm_backward_cpu(dinp.data(), dg.data(), db.data(), dout.data(), inp.data(), gf.data(), mean.data(),
                          rstd.data(), N, C);
  Vec x = to_double(xf), r = to_double(rf), g = to_double(gf), b = to_double(bf);
  const auto loss = [&] {
    Vec y(N * C);
    for (int64_t n = 0; n < N; ++n) {
      double m = 0, v = 0;
      for (int64_t c = 0; c < C; ++c) m += x[n * C + c] + r[n * C + c];
      m /= C;
      for (int64_t c = 0; c < C; ++c) v += std::pow(x[n * C + c] + r[n * C + c] - m, 2);
      const double s = 1 / std::sqrt(v / C + 1e-5);
      for (int64_t c = 0; c < C; ++c) y[n * C + c] = (x[n * C + c] + r[n * C + c] - m) * s * g[c] + b[c];
    }
    return dot(y, dout);
  };
  expect_matches_double_difference(x, dinp, loss, "layer_norm dx");
  expect_matches_double_difference(r, dinp, loss, "layer_norm dresidual");
  expect_matches_double_difference(g, dg, loss, "layer_norm dgamma");
  expect_matches_double_difference(b, db, loss, "layer_norm dbeta");
}

TEST(BackwardDouble, RmsNorm) {
  const int64_t N = 3, C = 16;
  auto xf = test::randn(N * C, 41, 1.5f), wf = test::randn(C, 42);
  const auto dout = test::randn(N * C, 43);
  std::vector<float> out(N * C), rstd(N), dx(N * C, 0.f), dw(C, 0.f);
  rms_norm_forward_cpu(out.data(), xf.data(), nullptr, wf.data(), N, C, 1e-6f, rstd.data());
  rms_norm_backward_cpu(dx.data(), dw.data(), dout.data(), xf.data(), wf.data(), rstd.data(), N, C);
  Vec x = to_double(xf), w = to_double(wf);
  const auto loss = [&] {
    Vec y(N * C);
    for (int64_t n = 0; n < N; ++n) {
      double ss = 0;
      for (int64_t c = 0; c < C; ++c) ss += x[n * C + c] * x[n * C + c];
      const double s = 1 / std::sqrt(ss / C + 1e-6);
      for (int64_t c = 0; c < C; ++c) y[n * C + c] = w[c] * x[n * C + c] * s;
    }
    return dot(y, dout);
  };
  expect_matches_double_difference(x, dx, loss, "rms_norm dx");
  expect_matches_double_difference(w, dw, loss, "rms_norm dweight");
}

TEST(BackwardDouble, Linear) {
  const int64_t M = 5, N = 4, K = 6;
  auto xf = test::randn(M * K, 11), Wf = test::randn(N * K, 12), bf = test::randn(N, 13);
  const auto dout = test::randn(M * N, 14);
  std::vector<float> dx(M * K, 0.f), dW(N * K, 0.f), db(N, 0.f);
  linear_backward_cpu(dx.data(), dW.data(), db.data(), dout.data(), xf.data(), Wf.data(), M, N, K);
  Vec x = to_double(xf), W = to_double(Wf), b = to_double(bf);
  const auto loss = [&] {
    Vec y(M * N);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = b[n];
        for (int64_t k = 0; k < K; ++k) s += x[m * K + k] * W[n * K + k];
        y[m * N + n] = s;
      }
    return dot(y, dout);
  };
  expect_matches_double_difference(x, dx, loss, "linear dx");
  expect_matches_double_difference(W, dW, loss, "linear dW");
  expect_matches_double_difference(b, db, loss, "linear db");
}

TEST(BackwardDouble, Embedding) {
  const int64_t V = 5, C = 3, N = 6;
  const std::vector<int32_t> ids = {1, 3, 1, 0, 4, 1};
  auto tf = test::randn(V * C, 41);
  const auto dout = test::randn(N * C, 42);
  std::vector<float> dt(V * C, 0.f);
  embedding_backward_cpu(dt.data(), ids.data(), dout.data(), N, C, -1);
  Vec t = to_double(tf);
  expect_matches_double_difference(
      t, dt,
      [&] {
        Vec y(N * C);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t c = 0; c < C; ++c) y[n * C + c] = t[ids[size_t(n)] * C + c];
        return dot(y, dout);
      },
      "embedding dtable");
}

TEST(BackwardDouble, SiluGate) {
  const int64_t N = 3, I = 8;
  auto guf = test::randn(N * 2 * I, 61, 2.0f);
  const auto dout = test::randn(N * I, 62);
  std::vector<float> dgu(N * 2 * I);
  silu_gate_backward_cpu(dgu.data(), guf.data(), dout.data(), N, I);
  Vec gu = to_double(guf);
  expect_matches_double_difference(
      gu, dgu,
      [&] {
        Vec y(N * I);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < I; ++i) {
            const double g = gu[n * 2 * I + i], u = gu[n * 2 * I + I + i];
            y[n * I + i] = g / (1 + std::exp(-g)) * u;
          }
        return dot(y, dout);
      },
      "silu_gate d(gate|up)");
}

TEST(BackwardDouble, Rope) {
  const int64_t N = 4, Hq = 2, Hk = 1, D = 8, ld = (Hq + 2 * Hk) * D;
  Tensor positions = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) positions.data<int32_t>()[i] = int32_t(3 * i + 1);
  RopeSettings settings;
  settings.head_dim = D;
  const std::vector<float> inv = rope_inverse_frequencies(settings, 16);
  const RopeTable table = rope_table(positions, inv);
  auto xf = test::randn(N * ld, 51);
  const auto dout = test::randn(N * ld, 52);
  Tensor d = Tensor::empty({N, ld}, DType::f32);
  std::copy(dout.begin(), dout.end(), d.data<float>());
  rope_backward(d, Hq, Hk, D, table);
  std::vector<float> dx(d.data<float>(), d.data<float>() + N * ld);
  Vec x = to_double(xf);
  expect_matches_double_difference(
      x, dx,
      [&] {
        Vec y = x;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t h = 0; h < Hq + Hk; ++h)  // query and key heads rotate (rotate_half), values pass
            for (int64_t i = 0; i < D / 2; ++i) {
              const double a = double(positions.data<int32_t>()[n]) * double(inv[size_t(i)]);
              const double x1 = x[n * ld + h * D + i], x2 = x[n * ld + h * D + i + D / 2];
              y[n * ld + h * D + i] = x1 * std::cos(a) - x2 * std::sin(a);
              y[n * ld + h * D + i + D / 2] = x2 * std::cos(a) + x1 * std::sin(a);
            }
        return dot(y, dout);
      },
      "rope dx");
}

// softmax(scale · q·k over the keys a row may see) · v, per (batch, head, query).
Vec reference_attention(const Vec& qkv, int64_t B, int64_t T, int64_t H, int64_t KVH, int64_t D, int64_t q_off,
                        int64_t k_off, int64_t v_off, int64_t ld, const std::vector<int32_t>& mask, bool causal,
                        double scale, int64_t window = 0) {
  Vec out(B * T * H * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t kh = h / (H / KVH);
        std::vector<double> s(T, -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          if (!mask[size_t(b * T + j)] || (causal && j > t)) continue;
          if (window > 0 && (causal ? t - j >= window : std::abs(t - j) > window)) continue;  // sliding windows
          double d = 0;
          for (int64_t e = 0; e < D; ++e)
            d += qkv[(b * T + t) * ld + q_off + h * D + e] * qkv[(b * T + j) * ld + k_off + kh * D + e];
          s[size_t(j)] = d * scale;
          mx = std::max(mx, s[size_t(j)]);
        }
        double sum = 0;
        if (!causal && mx == -INFINITY)
          std::fill(s.begin(), s.end(), 0.0), mx = 0;  // padding only: uniform (transformers)
        if (mx == -INFINITY) continue;                 // causal, padding only: zeros
        for (auto& v : s) sum += (v = std::isfinite(v) ? std::exp(v - mx) : 0.0);
        for (int64_t j = 0; j < T; ++j)
          for (int64_t e = 0; e < D; ++e)
            out[((b * T + t) * H + h) * D + e] += s[size_t(j)] / sum * qkv[(b * T + j) * ld + v_off + kh * D + e];
      }
  return out;
}

TEST(BackwardDouble, AttentionWithPadding) {
  const int64_t B = 3, T = 5, H = 2, D = 3, C = H * D;
  auto qkvf = test::randn(B * T * 3 * C, 21);
  const auto dout = test::randn(B * T * C, 22);
  const std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0};
  std::vector<float> out(B * T * C), probs(B * H * T * T), dqkv(B * T * 3 * C, 0.f);
  const float* q = qkvf.data();
  attention_forward_train_cpu(out.data(), probs.data(), q, q + C, q + 2 * C, mask.data(), B, T, H, D, 3 * C, C, 0.5f,
                              0.f, 0);
  attention_backward_cpu(dqkv.data(), dqkv.data() + C, dqkv.data() + 2 * C, dout.data(), probs.data(), q, q + C,
                         q + 2 * C, mask.data(), B, T, H, D, 3 * C, C, 0.5f, 0.f, 0);
  Vec qkv = to_double(qkvf);
  expect_matches_double_difference(
      qkv, dqkv,
      [&] { return dot(reference_attention(qkv, B, T, H, H, D, 0, C, 2 * C, 3 * C, mask, false, 0.5), dout); },
      "attention dqkv");
}

TEST(BackwardDouble, CausalGroupedQueryAttention) {
  const int64_t B = 2, T = 5, H = 4, KVH = 2, D = 3, QKV = (H + 2 * KVH) * D;
  auto qkvf = test::randn(B * T * QKV, 71);
  const auto dout = test::randn(B * T * H * D, 72);
  const std::vector<int32_t> mask = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  CausalAttentionArgs a;
  a.B = B, a.Tq = T, a.H = H, a.KVH = KVH, a.D = D, a.ld_q = a.ld_kv = QKV, a.batch_stride_kv = T * QKV;
  a.ld_out = H * D, a.mask_stride = T, a.scale = 0.6f;
  std::vector<float> out(B * T * H * D), probs(B * H * T * T), dqkv(B * T * QKV, 0.f);
  const float* q = qkvf.data();
  causal_attention_forward_cpu(out.data(), probs.data(), q, q + H * D, q + (H + KVH) * D, mask.data(), a);
  causal_attention_backward_cpu(dqkv.data(), dqkv.data() + H * D, dqkv.data() + (H + KVH) * D, dout.data(),
                                probs.data(), q, q + H * D, q + (H + KVH) * D, mask.data(), a);
  Vec qkv = to_double(qkvf);
  expect_matches_double_difference(
      qkv, dqkv,
      [&] {
        return dot(reference_attention(qkv, B, T, H, KVH, D, 0, H * D, (H + KVH) * D, QKV, mask, true, double(0.6f)),
                   dout);
      },
      "causal attention dqkv");
}

// Longer than one block of query rows (64), so the blocks' key ranges matter: causal and
// bidirectional (ModernBERT), each with and without a sliding window, a right-padded and a
// left-padded row (whose first queries see padding only under the window: zeros when causal, the
// mean of every value when bidirectional, as transformers), and two query heads on one key/value head; the forward against the double reference, the backward
// (saved and recomputed probabilities) against its differences.
TEST(BackwardDouble, AttentionBlocksWindowsAndDirections) {
  const int64_t B = 3, T = 80, H = 2, KVH = 1, D = 2, QKV = (H + 2 * KVH) * D;
  auto qkvf = test::randn(B * T * QKV, 81);
  const auto dout = test::randn(B * T * H * D, 82);
  std::vector<int32_t> mask(size_t(B * T), 1);
  for (int64_t t = 71; t < T; ++t) mask[size_t(T + t)] = 0;      // right-padded
  for (int64_t t = 0; t < 30; ++t) mask[size_t(2 * T + t)] = 0;  // left-padded: under a window, rows of padding only
  for (const bool causal : {true, false})
    for (const int64_t window : {int64_t(0), int64_t(24)}) {
      CausalAttentionArgs a;
      a.B = B, a.Tq = T, a.H = H, a.KVH = KVH, a.D = D, a.ld_q = a.ld_kv = QKV, a.batch_stride_kv = T * QKV;
      a.ld_out = H * D, a.mask_stride = T, a.scale = 0.6f, a.causal = causal, a.window = window;
      const std::string what = std::string(causal ? "causal" : "bidirectional") + " window " + std::to_string(window);
      std::vector<float> out(B * T * H * D), probs(B * H * T * T);
      const float* q = qkvf.data();
      causal_attention_forward_cpu(out.data(), probs.data(), q, q + H * D, q + (H + KVH) * D, mask.data(), a);
      Vec qkv = to_double(qkvf);
      const Vec want =
          reference_attention(qkv, B, T, H, KVH, D, 0, H * D, (H + KVH) * D, QKV, mask, causal, double(0.6f), window);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-5) << what << " [" << i << "]";
      for (const bool saved : {true, false}) {
        std::vector<float> dqkv(B * T * QKV, 0.f);
        causal_attention_backward_cpu(dqkv.data(), dqkv.data() + H * D, dqkv.data() + (H + KVH) * D, dout.data(),
                                      saved ? probs.data() : nullptr, q, q + H * D, q + (H + KVH) * D, mask.data(), a);
        expect_matches_double_difference(
            qkv, dqkv,
            [&] {
              return dot(reference_attention(qkv, B, T, H, KVH, D, 0, H * D, (H + KVH) * D, QKV, mask, causal,
                                             double(0.6f), window),
                         dout);
            },
            what + (saved ? " dqkv (saved)" : " dqkv (recomputed)"));
      }
      // The declared cost counts only the blocks' scores: a window computes a band.
      CausalAttentionArgs unwindowed = a;
      unwindowed.window = 0;
      const int64_t full = causal ? T * (T + 1) / 2 : T * T;
      EXPECT_GE(attention_scores_computed(unwindowed), full) << what;
      // 80 rows: the forward runs them as one block, the backward as blocks of 64.
      EXPECT_EQ(attention_scores_computed(a), T * T) << what;
      if (window > 0) {
        EXPECT_LT(attention_scores_computed(a, true), attention_scores_computed(unwindowed, true)) << what;
      }
      // Over long rows a sliding layer's scores grow linearly with the length, a full layer's as its square.
      CausalAttentionArgs l1 = a, l2 = a;
      l1.Tq = 4096, l2.Tq = 8192;
      const double growth = double(attention_scores_computed(l2)) / double(attention_scores_computed(l1));
      EXPECT_NEAR(growth, window > 0 ? 2.0 : 4.0, window > 0 ? 0.05 : 0.1) << what;
    }
}

TEST(BackwardDouble, Lora) {
  const int64_t M = 4, K = 6, N = 3, r = 2;
  auto xf = test::randn(M * K, 91), Af = test::randn(r * K, 92), Bf = test::randn(N * r, 93);
  const auto dout = test::randn(M * N, 94);
  LoraShape s;
  s.M = M, s.K = K, s.N = N, s.r = r, s.scale = 1.5f;
  std::vector<float> y(M * N, 0.f), xa(M * r), scratch(M * K + M * r), dx(M * K, 0.f), dA(r * K, 0.f), dB(N * r, 0.f);
  lora_forward_cpu(y.data(), N, xa.data(), xf.data(), Af.data(), Bf.data(), s, scratch.data());
  lora_backward_cpu(dx.data(), dA.data(), dB.data(), dout.data(), N, xf.data(), xa.data(), Af.data(), Bf.data(), s,
                    scratch.data());
  Vec x = to_double(xf), A = to_double(Af), Bw = to_double(Bf);
  const auto loss = [&] {  // y = scale · (x Aᵀ) Bᵀ
    Vec out(M * N, 0.0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j < r; ++j) {
          double xa_mj = 0;
          for (int64_t k = 0; k < K; ++k) xa_mj += x[m * K + k] * A[j * K + k];
          out[m * N + n] += 1.5 * xa_mj * Bw[n * r + j];
        }
    return dot(out, dout);
  };
  expect_matches_double_difference(x, dx, loss, "lora dx");
  expect_matches_double_difference(A, dA, loss, "lora dA");
  expect_matches_double_difference(Bw, dB, loss, "lora dB");
}

}  // namespace
}  // namespace tach::ops
